#include "runtime/ir.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace graphserve {

namespace {

template <typename T>
absl::StatusOr<T> GetAttr(const Attributes& attrs, const std::string& name, T default_value,
                          const char* expected) {
  auto it = attrs.find(name);
  if (it == attrs.end()) return default_value;
  if (const T* value = std::get_if<T>(&it->second)) return *value;
  return absl::InvalidArgumentError(
      absl::StrCat("attribute '", name, "' should be ", expected));
}

}  // namespace

absl::StatusOr<int64_t> GetIntAttr(const Attributes& attrs, const std::string& name,
                                   int64_t default_value) {
  return GetAttr<int64_t>(attrs, name, default_value, "an int");
}

absl::StatusOr<float> GetFloatAttr(const Attributes& attrs, const std::string& name,
                                   float default_value) {
  return GetAttr<float>(attrs, name, default_value, "a float");
}

absl::StatusOr<std::vector<int64_t>> GetIntsAttr(const Attributes& attrs,
                                                 const std::string& name,
                                                 std::vector<int64_t> default_value) {
  return GetAttr<std::vector<int64_t>>(attrs, name, std::move(default_value), "a list of ints");
}

int64_t IntAttr(const Attributes& attrs, const std::string& name) {
  auto it = attrs.find(name);
  if (it == attrs.end()) return 0;
  const int64_t* value = std::get_if<int64_t>(&it->second);
  return value ? *value : 0;
}

float FloatAttr(const Attributes& attrs, const std::string& name) {
  auto it = attrs.find(name);
  if (it == attrs.end()) return 0.0f;
  const float* value = std::get_if<float>(&it->second);
  return value ? *value : 0.0f;
}

const std::vector<int64_t>& IntsAttr(const Attributes& attrs, const std::string& name) {
  static const std::vector<int64_t> kEmpty;
  auto it = attrs.find(name);
  if (it == attrs.end()) return kEmpty;
  const auto* value = std::get_if<std::vector<int64_t>>(&it->second);
  return value ? *value : kEmpty;
}

std::vector<std::string> ShapeDimNames(const Model& model) {
  std::vector<std::string> names;
  for (const ValueInfo& input : model.inputs) {
    for (size_t d = model.batches ? 1 : 0; d < input.dim_names.size(); ++d) {
      const std::string& name = input.dim_names[d];
      if (!name.empty() && d < input.dims.size() && input.dims[d] < 0 &&
          std::find(names.begin(), names.end(), name) == names.end()) {
        names.push_back(name);
      }
    }
  }
  return names;
}

}  // namespace graphserve
