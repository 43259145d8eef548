#include "runtime/op_registry.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/ops/families.h"

namespace graphserve {

Arity OpDef::ArityAt(int64_t opset) const {
  Arity result = arity.empty() ? Arity{} : arity.front().arity;
  for (const ArityChange& change : arity) {
    if (change.since_opset <= opset) result = change.arity;
  }
  return result;
}

bool OpDef::IsShapeOperand(size_t input) const {
  return std::find(plan_time_operands.begin(), plan_time_operands.end(), input) != plan_time_operands.end();
}

std::string OpDef::InputLabel(size_t input) const {
  if (input < input_names.size())
    return absl::StrCat("input ", input, " '", input_names[input], "'");
  return absl::StrCat("input ", input);
}

const std::vector<OpDef>& AllOps() {
  static const std::vector<OpDef>* const kOps = [] {
    auto* ops = new std::vector<OpDef>;
    AddElementwiseOps(*ops);
    AddDataMovementOps(*ops);
    AddLinearAlgebraOps(*ops);
    AddNormalizationOps(*ops);
    AddNnOps(*ops);
    AddAttentionOps(*ops);
    std::sort(ops->begin(), ops->end(),
              [](const OpDef& a, const OpDef& b) { return a.name < b.name; });
    return ops;
  }();
  return *kOps;
}

const OpDef* FindOp(const std::string& op_type) {
  const std::vector<OpDef>& ops = AllOps();
  auto it =
      std::lower_bound(ops.begin(), ops.end(), op_type,
                       [](const OpDef& op, const std::string& name) { return op.name < name; });
  return it != ops.end() && it->name == op_type ? &*it : nullptr;
}

const std::vector<std::string>& SupportedOps() {
  static const std::vector<std::string>* const kNames = [] {
    auto* names = new std::vector<std::string>;
    for (const OpDef& op : AllOps()) names->push_back(op.name);
    return names;
  }();
  return *kNames;
}

bool IsSupportedOp(const std::string& op_type) { return FindOp(op_type) != nullptr; }

std::string OpTableMarkdown() {
  std::string table =
      "| op | family | opsets | attributes | notes |\n| --- | --- | --- | --- | --- |\n";
  for (const OpDef& op : AllOps()) {
    absl::StrAppend(&table, "| ", op.name, " | ", op.family, " | ", op.since_opset, "+ | ",
                    op.attributes.empty() ? "-" : absl::StrJoin(op.attributes, ", "), " | ",
                    op.summary, " |\n");
  }
  return table;
}

}  // namespace graphserve
