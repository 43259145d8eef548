#include "capture_cli/metrics_text.h"

#include <cstdint>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace graphserve {
namespace {

bool IsNameStart(char c) { return absl::ascii_isalpha(c) || c == '_' || c == ':'; }
bool IsNameChar(char c) { return IsNameStart(c) || absl::ascii_isdigit(c); }

// One sample line, consumed from the front.
class SampleLine {
 public:
  SampleLine(absl::string_view text, int line_number) : rest_(text), line_(line_number) {}

  absl::StatusOr<MetricSample> Parse() {
    MetricSample sample;
    if (rest_.empty() || !IsNameStart(rest_.front())) return Error("expected a metric name");
    sample.name = std::string(TakeWhile(IsNameChar));
    SkipBlanks();
    if (Consume('{')) {
      absl::Status labels = ParseLabels(sample);
      if (!labels.ok()) return labels;
      SkipBlanks();
    }
    const absl::string_view value = TakeWhile([](char c) { return c != ' ' && c != '\t'; });
    absl::StatusOr<double> parsed = ParseValue(value);
    if (!parsed.ok()) return parsed.status();
    sample.value = *parsed;
    SkipBlanks();
    if (!rest_.empty()) {
      const absl::string_view timestamp = TakeWhile([](char c) { return c != ' ' && c != '\t'; });
      int64_t ignored = 0;
      if (!absl::SimpleAtoi(timestamp, &ignored)) {
        return Error(absl::StrCat("expected an integer timestamp or the end of the line, got '",
                                  timestamp, "'"));
      }
      SkipBlanks();
      if (!rest_.empty()) {
        return Error(absl::StrCat("unexpected '", rest_, "' after the timestamp"));
      }
    }
    return sample;
  }

 private:
  // Labels up to and including '}': name="value" pairs, comma separated, an
  // optional trailing comma.
  absl::Status ParseLabels(MetricSample& sample) {
    for (;;) {
      SkipBlanks();
      if (Consume('}')) return absl::OkStatus();
      if (rest_.empty() || !(absl::ascii_isalpha(rest_.front()) || rest_.front() == '_')) {
        return Error("expected a label name or '}'");
      }
      std::string name(TakeWhile([](char c) { return absl::ascii_isalnum(c) || c == '_'; }));
      SkipBlanks();
      if (!Consume('=')) return Error(absl::StrCat("expected '=' after label ", name));
      SkipBlanks();
      if (!Consume('"')) {
        return Error(absl::StrCat("expected '\"' to open label ", name, "'s value"));
      }
      std::string value;
      for (;;) {
        if (rest_.empty()) return Error(absl::StrCat("label ", name, "'s value is not closed"));
        const char c = rest_.front();
        rest_.remove_prefix(1);
        if (c == '"') break;
        if (c != '\\') {
          value.push_back(c);
          continue;
        }
        if (rest_.empty()) return Error(absl::StrCat("label ", name, "'s value is not closed"));
        const char escaped = rest_.front();
        rest_.remove_prefix(1);
        if (escaped == '\\' || escaped == '"') {
          value.push_back(escaped);
        } else if (escaped == 'n') {
          value.push_back('\n');
        } else {
          return Error(absl::StrCat("unknown escape '\\", std::string(1, escaped), "' in label ",
                                    name, " (the format has \\\\, \\\" and \\n)"));
        }
      }
      sample.labels.emplace_back(std::move(name), std::move(value));
      SkipBlanks();
      if (Consume(',')) continue;
      if (Consume('}')) return absl::OkStatus();
      return Error("expected ',' or '}' after a label");
    }
  }

  absl::StatusOr<double> ParseValue(absl::string_view text) const {
    if (text == "+Inf" || text == "Inf") return std::numeric_limits<double>::infinity();
    if (text == "-Inf") return -std::numeric_limits<double>::infinity();
    if (text == "NaN") return std::numeric_limits<double>::quiet_NaN();
    double value = 0;
    if (text.empty() || !absl::SimpleAtod(text, &value)) {
      return Error(absl::StrCat("expected a value, got '", text, "'"));
    }
    return value;
  }

  template <typename Predicate>
  absl::string_view TakeWhile(Predicate keep) {
    size_t n = 0;
    while (n < rest_.size() && keep(rest_[n])) ++n;
    const absl::string_view taken = rest_.substr(0, n);
    rest_.remove_prefix(n);
    return taken;
  }

  void SkipBlanks() {
    TakeWhile([](char c) { return c == ' ' || c == '\t'; });
  }

  bool Consume(char c) {
    if (rest_.empty() || rest_.front() != c) return false;
    rest_.remove_prefix(1);
    return true;
  }

  absl::Status Error(absl::string_view message) const {
    return absl::InvalidArgumentError(absl::StrCat("line ", line_, ": ", message));
  }

  absl::string_view rest_;
  const int line_;
};

}  // namespace

const std::string* MetricSample::Label(absl::string_view key) const {
  for (const auto& [name, value] : labels) {
    if (name == key) return &value;
  }
  return nullptr;
}

absl::StatusOr<std::vector<MetricSample>> ParseMetricsText(absl::string_view text) {
  std::vector<MetricSample> samples;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    line = absl::StripLeadingAsciiWhitespace(line);
    if (line.empty() || line.front() == '#') continue;
    absl::StatusOr<MetricSample> sample = SampleLine(line, line_number).Parse();
    if (!sample.ok()) return sample.status();
    samples.push_back(*std::move(sample));
  }
  return samples;
}

}  // namespace graphserve
