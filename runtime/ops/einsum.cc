// Einsum, bound as the ops it is made of (Note [Einsum lowering]); part of
// the linear algebra family (runtime/ops/linear_algebra.cc adds the OpDef).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status.h"
#include "runtime/bind_context.h"
#include "runtime/ops/families.h"

namespace graphserve {

// Note [Einsum lowering]
// ~~~~~~~~~~~~~~~~~~~~~~
// An Einsum has no kernel of its own: binding rewrites it into ReduceSum,
// Transpose, Reshape, Slice and MatMul nodes, so the GPU runs the contraction on
// cuBLASLt through MatMul's kernel and the Reshapes alias. The operands are
// contracted left to right, two at a time. For a pair A, B and the labels
// still needed afterwards (the output's and those of later operands):
//  1. a label only one side has and nobody needs is summed out there
//     (ReduceSum); so is a shared label nobody needs whose sizes differ by
//     broadcasting (an ellipsis dim of 1 on one side);
//  2. the remaining labels are batch (both sides, needed), kept-A, kept-B
//     (one side, needed) and contracted (both sides, not needed);
//  3. A is transposed to [batch, kept-A, contracted] and viewed as
//     [batch..., M, K], B to [batch, contracted, kept-B] as [batch..., K, N];
//     MatMul broadcasts the batch dims (an ellipsis dim of 1 against n) and
//     its [batch..., M, N] is viewed as [batch..., kept-A..., kept-B...].
// With no contracted label K is 1: an outer product. One operand is step 1
// alone. Last, a Transpose puts the labels in the output's order. Steps that
// would change nothing (an identity perm, a view of the same dims) are left
// out. A label repeated within one operand ("ii->i") first takes that
// operand's diagonal: a strided Slice of a flat view (EinsumEmitter::Diagonal).

namespace {

// Labels are ints: 'a'..'z' are 0..25, 'A'..'Z' 26..51, and the ellipsis'
// dims kFirstEllipsisLabel + k, k counted over the widest ellipsis from the
// left.
constexpr int kFirstEllipsisLabel = 52;

using Labels = std::vector<int>;

std::optional<int> LetterLabel(char c) {
  if (c >= 'a' && c <= 'z') return c - 'a';
  if (c >= 'A' && c <= 'Z') return 26 + (c - 'A');
  return std::nullopt;
}

// One term of the equation ("b...ij"): its letters' labels, and where the
// ellipsis stands among them (nullopt: no ellipsis).
struct Term {
  Labels letters;
  std::optional<size_t> ellipsis_at;
};

absl::StatusOr<Term> ParseTerm(const BindContext& ctx, const std::string& text) {
  Term term;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text.compare(i, 3, "...") == 0) {
      if (term.ellipsis_at) return ctx.Error("term '", text, "' has two ellipses");
      term.ellipsis_at = term.letters.size();
      i += 2;
      continue;
    }
    std::optional<int> label = LetterLabel(text[i]);
    if (!label) return ctx.Error("term '", text, "' has '", std::string(1, text[i]), "'");
    term.letters.push_back(*label);
  }
  return term;
}

// The labels of a term whose ellipsis covers `ellipsis_rank` dims, the
// widest ellipsis covering `widest`: its dims are the widest's last ones.
Labels ExpandTerm(const Term& term, int64_t ellipsis_rank, int64_t widest) {
  Labels labels(term.letters.begin(),
                term.letters.begin() +
                    static_cast<std::ptrdiff_t>(term.ellipsis_at.value_or(term.letters.size())));
  for (int64_t k = widest - ellipsis_rank; k < widest; ++k) {
    labels.push_back(kFirstEllipsisLabel + static_cast<int>(k));
  }
  if (term.ellipsis_at) {
    labels.insert(labels.end(),
                  term.letters.begin() + static_cast<std::ptrdiff_t>(*term.ellipsis_at),
                  term.letters.end());
  }
  return labels;
}

bool Has(const Labels& labels, int label) {
  return std::find(labels.begin(), labels.end(), label) != labels.end();
}

// A value on its way through the lowering, with a label per dim.
struct Operand {
  ValueId id = kOmitted;
  Dims dims;
  Labels labels;
};

// Emits the lowering's nodes. The most recent step is held back, so that
// the last one becomes the model node (with the model's output name) and
// every other a helper ("<node>/<suffix>").
class EinsumEmitter {
 public:
  EinsumEmitter(BindContext& ctx, DType dtype) : ctx_(ctx), dtype_(dtype) {}

  // A node of `op` over `inputs`, whose output has `dims` and `labels`.
  absl::StatusOr<Operand> Step(std::string suffix, std::string op, std::vector<Operand> inputs,
                               Attributes attrs, Dims dims, Labels labels) {
    RETURN_IF_ERROR(Flush());
    Pending next{std::move(suffix), std::move(op), {}, std::move(attrs), dims};
    for (const Operand& input : inputs) next.inputs.push_back(Resolve(input.id));
    pending_ = std::move(next);
    const ValueId id = StepId(emitted_.size());
    return Operand{id, std::move(dims), std::move(labels)};
  }

  // Sums out the dims of `operand` whose labels `drop` holds.
  absl::StatusOr<Operand> SumOut(const std::string& suffix, Operand operand, const Labels& drop) {
    std::vector<int64_t> axes;
    Operand out;
    for (size_t d = 0; d < operand.labels.size(); ++d) {
      if (Has(drop, operand.labels[d])) {
        axes.push_back(static_cast<int64_t>(d));
      } else {
        out.dims.push_back(operand.dims[d]);
        out.labels.push_back(operand.labels[d]);
      }
    }
    if (axes.empty()) return operand;
    return Step(suffix, "ReduceSum", {std::move(operand)},
                {{"axes", std::move(axes)}, {"keepdims", int64_t{0}}}, std::move(out.dims),
                std::move(out.labels));
  }

  // Transposes `operand` so that its labels read `order` (a permutation).
  absl::StatusOr<Operand> Permute(const std::string& suffix, Operand operand, const Labels& order) {
    if (operand.labels == order) return operand;
    std::vector<int64_t> perm;
    Dims dims;
    for (int label : order) {
      const size_t d = static_cast<size_t>(
          std::find(operand.labels.begin(), operand.labels.end(), label) - operand.labels.begin());
      perm.push_back(static_cast<int64_t>(d));
      dims.push_back(operand.dims[d]);
    }
    return Step(suffix, "Transpose", {std::move(operand)}, {{"perm", std::move(perm)}},
                std::move(dims), order);
  }

  // `operand` viewed with `dims` (labels describe the new dims).
  absl::StatusOr<Operand> View(const std::string& suffix, Operand operand, Dims dims,
                               Labels labels) {
    if (operand.dims == dims) {
      operand.labels = std::move(labels);
      return operand;
    }
    return Step(suffix, "Reshape", {std::move(operand)}, {}, std::move(dims), std::move(labels));
  }

  // The diagonal of `operand` over the dims labelled `label` (two or more,
  // of one size n): those dims moved last, viewed as one of n^r elements,
  // and sliced with step 1 + n + ... + n^(r-1), which walks the diagonal.
  absl::StatusOr<Operand> Diagonal(const std::string& suffix, Operand operand, int label) {
    std::vector<int64_t> perm;
    Operand rest;
    int64_t n = 1, repeats = 0;
    for (size_t d = 0; d < operand.labels.size(); ++d) {
      if (operand.labels[d] == label) {
        n = operand.dims[d];
        ++repeats;
        continue;
      }
      perm.push_back(static_cast<int64_t>(d));
      rest.dims.push_back(operand.dims[d]);
      rest.labels.push_back(operand.labels[d]);
    }
    Dims moved_dims = rest.dims;
    for (size_t d = 0; d < operand.labels.size(); ++d) {
      if (operand.labels[d] != label) continue;
      perm.push_back(static_cast<int64_t>(d));
      moved_dims.push_back(n);
    }
    Labels moved_labels = rest.labels;
    moved_labels.insert(moved_labels.end(), static_cast<size_t>(repeats), label);
    std::vector<int64_t> identity(perm.size());
    for (size_t d = 0; d < perm.size(); ++d) identity[d] = static_cast<int64_t>(d);
    if (perm != identity) {
      ASSIGN_OR_RETURN(operand, Step(suffix + "_perm", "Transpose", {std::move(operand)},
                                     {{"perm", std::move(perm)}}, moved_dims, moved_labels));
    }
    int64_t flat = 1, step = 0;
    for (int64_t r = 0; r < repeats; ++r) {
      step += flat;
      flat *= n;
    }
    Dims flat_dims = rest.dims;
    flat_dims.push_back(flat);
    Labels diagonal_labels = rest.labels;
    diagonal_labels.push_back(label);
    ASSIGN_OR_RETURN(operand,
                     View(suffix + "_flat", std::move(operand), flat_dims, diagonal_labels));
    std::vector<int64_t> steps(flat_dims.size(), 1);
    steps.back() = n > 1 ? step : 1;
    Dims diagonal_dims = rest.dims;
    diagonal_dims.push_back(n);
    return Step(
        suffix, "Slice", {std::move(operand)},
        {{"starts", std::vector<int64_t>(flat_dims.size(), 0)}, {"steps", std::move(steps)}},
        std::move(diagonal_dims), std::move(diagonal_labels));
  }

  // Emits the held-back step as the model node; with no step taken, the
  // output is model input `input` itself.
  absl::Status Finish(size_t input) {
    if (!pending_) return ctx_.EmitIdentity(input);
    Pending last = *std::move(pending_);
    return ctx_.EmitModelNode(std::move(last.op), std::move(last.inputs), std::move(last.attrs),
                              {OutputSpec{"", dtype_, std::move(last.dims)}});
  }

 private:
  // An operand a step made is named by the step's index until the step is
  // emitted: -2 for the first, -3 for the second, ...
  static ValueId StepId(size_t step) { return -2 - static_cast<ValueId>(step); }
  ValueId Resolve(ValueId id) const {
    return id <= StepId(0) ? emitted_[static_cast<size_t>(StepId(0) - id)] : id;
  }

  struct Pending {
    std::string suffix;
    std::string op;
    std::vector<ValueId> inputs;
    Attributes attrs;
    Dims dims;
  };

  absl::Status Flush() {
    if (!pending_) return absl::OkStatus();
    Pending step = *std::move(pending_);
    pending_.reset();
    ASSIGN_OR_RETURN(const ValueId id,
                     ctx_.EmitHelper(step.suffix, std::move(step.op), std::move(step.inputs),
                                     std::move(step.attrs), dtype_, std::move(step.dims)));
    emitted_.push_back(id);
    return absl::OkStatus();
  }

  BindContext& ctx_;
  const DType dtype_;
  std::optional<Pending> pending_;
  std::vector<ValueId> emitted_;  // by step index
};

// The dims of `labels` in `operand`'s order, and their product.
int64_t SizeOf(const Operand& operand, const Labels& labels) {
  int64_t size = 1;
  for (size_t d = 0; d < operand.labels.size(); ++d) {
    if (Has(labels, operand.labels[d])) size *= operand.dims[d];
  }
  return size;
}

Dims DimsOf(const Operand& operand, const Labels& labels) {
  Dims dims;
  for (int label : labels) {
    const auto it = std::find(operand.labels.begin(), operand.labels.end(), label);
    dims.push_back(operand.dims[static_cast<size_t>(it - operand.labels.begin())]);
  }
  return dims;
}

Labels Concat(std::initializer_list<const Labels*> parts) {
  Labels all;
  for (const Labels* part : parts) all.insert(all.end(), part->begin(), part->end());
  return all;
}

// Contracts a and b over the labels `needed` (later operands' and the
// output's) does not hold (Note [Einsum lowering], steps 1-3). `tag`
// prefixes the pair's helper node names.
absl::StatusOr<Operand> ContractPair(EinsumEmitter& emit, const std::string& tag, Operand a,
                                     Operand b, const Labels& needed) {
  Labels drop_a, drop_b, batch, kept_a, kept_b, contracted;
  for (size_t d = 0; d < a.labels.size(); ++d) {
    const int label = a.labels[d];
    if (!Has(b.labels, label)) {
      (Has(needed, label) ? kept_a : drop_a).push_back(label);
    } else if (Has(needed, label)) {
      batch.push_back(label);
    } else if (a.dims[d] != DimsOf(b, {label})[0]) {
      drop_a.push_back(label);
      drop_b.push_back(label);
    } else {
      contracted.push_back(label);
    }
  }
  for (int label : b.labels) {
    if (!Has(a.labels, label)) (Has(needed, label) ? kept_b : drop_b).push_back(label);
  }
  ASSIGN_OR_RETURN(a, emit.SumOut(tag + "a_sum", std::move(a), drop_a));
  ASSIGN_OR_RETURN(b, emit.SumOut(tag + "b_sum", std::move(b), drop_b));
  ASSIGN_OR_RETURN(
      a, emit.Permute(tag + "a_perm", std::move(a), Concat({&batch, &kept_a, &contracted})));
  ASSIGN_OR_RETURN(
      b, emit.Permute(tag + "b_perm", std::move(b), Concat({&batch, &contracted, &kept_b})));
  const Dims a_batch = DimsOf(a, batch);
  const Dims b_batch = DimsOf(b, batch);
  const Dims kept_a_dims = DimsOf(a, kept_a);
  const Dims kept_b_dims = DimsOf(b, kept_b);
  const int64_t m = SizeOf(a, kept_a);
  const int64_t k = SizeOf(a, contracted);
  const int64_t n = SizeOf(b, kept_b);
  Dims a_view = a_batch;
  a_view.insert(a_view.end(), {m, k});
  Dims b_view = b_batch;
  b_view.insert(b_view.end(), {k, n});
  ASSIGN_OR_RETURN(a, emit.View(tag + "a_view", std::move(a), a_view, {}));
  ASSIGN_OR_RETURN(b, emit.View(tag + "b_view", std::move(b), b_view, {}));
  // The batch dims broadcast: equal, or an ellipsis dim of 1 against n.
  Dims batch_dims;
  for (size_t i = 0; i < batch.size(); ++i) batch_dims.push_back(std::max(a_batch[i], b_batch[i]));
  Dims product_dims = batch_dims;
  product_dims.insert(product_dims.end(), {m, n});
  ASSIGN_OR_RETURN(Operand product,
                   emit.Step(tag + "product", "MatMul", {std::move(a), std::move(b)}, {},
                             std::move(product_dims), {}));
  Dims result_dims = batch_dims;
  result_dims.insert(result_dims.end(), kept_a_dims.begin(), kept_a_dims.end());
  result_dims.insert(result_dims.end(), kept_b_dims.begin(), kept_b_dims.end());
  return emit.View(tag + "product_view", std::move(product), std::move(result_dims),
                   Concat({&batch, &kept_a, &kept_b}));
}

// The output labels an equation without "->" implies: the ellipsis' dims,
// then the letters that occur once over all terms, in alphabetical order.
Labels ImplicitOutput(const std::vector<Labels>& operands) {
  Labels output;
  std::vector<int> count(kFirstEllipsisLabel, 0);
  int widest_ellipsis = 0;
  for (const Labels& labels : operands) {
    for (int label : labels) {
      if (label < kFirstEllipsisLabel) {
        ++count[label];
      } else {
        widest_ellipsis = std::max(widest_ellipsis, label - kFirstEllipsisLabel + 1);
      }
    }
  }
  for (int k = 0; k < widest_ellipsis; ++k) output.push_back(kFirstEllipsisLabel + k);
  // ONNX sorts by character: the upper case letters (26..51 here) first.
  for (int label = 26; label < kFirstEllipsisLabel; ++label) {
    if (count[label] == 1) output.push_back(label);
  }
  for (int label = 0; label < 26; ++label) {
    if (count[label] == 1) output.push_back(label);
  }
  return output;
}

absl::Status BindEinsum(BindContext& ctx) {
  if (!ctx.has_attr("equation")) return ctx.Error("attribute 'equation' is required");
  ASSIGN_OR_RETURN(std::string equation, ctx.StringAttrOr("equation", ""));
  equation.erase(std::remove(equation.begin(), equation.end(), ' '), equation.end());
  const size_t arrow = equation.find("->");
  const std::string lhs = equation.substr(0, arrow);
  const std::vector<std::string> term_texts = absl::StrSplit(lhs, ',');
  if (term_texts.size() != ctx.num_inputs()) {
    return ctx.Error("equation '", equation, "' has ", term_texts.size(), " terms for ",
                     ctx.num_inputs(), " inputs");
  }
  const DType dtype = ctx.in_dtype(0);
  RETURN_IF_ERROR(
      ctx.CheckDType(0, {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64}));
  // The operands' labels, with the ellipsis' dims right-aligned.
  std::vector<Term> terms;
  int64_t widest = 0;
  for (size_t i = 0; i < term_texts.size(); ++i) {
    RETURN_IF_ERROR(ctx.CheckSameDType(0, i));
    ASSIGN_OR_RETURN(Term term, ParseTerm(ctx, term_texts[i]));
    const int64_t rank = static_cast<int64_t>(ctx.in_dims(i).size());
    const int64_t letters = static_cast<int64_t>(term.letters.size());
    if (term.ellipsis_at ? rank < letters : rank != letters) {
      return ctx.Error("term '", term_texts[i], "' does not fit input ", i, " dims ",
                       DimsToString(ctx.in_dims(i)));
    }
    widest = std::max(widest, rank - letters);
    terms.push_back(std::move(term));
  }
  std::vector<Operand> operands;
  std::vector<Labels> all_labels;
  std::vector<int64_t> sizes(kFirstEllipsisLabel + static_cast<size_t>(widest), -1);
  for (size_t i = 0; i < terms.size(); ++i) {
    const Dims& dims = ctx.in_dims(i);
    const int64_t ellipsis_rank = static_cast<int64_t>(dims.size() - terms[i].letters.size());
    Labels labels = ExpandTerm(terms[i], ellipsis_rank, widest);
    for (size_t d = 0; d < labels.size(); ++d) {
      const int label = labels[d];
      int64_t& size = sizes[static_cast<size_t>(label)];
      const bool repeated = std::count(labels.begin(), labels.begin() + d, label) > 0;
      const bool broadcasts =
          !repeated && label >= kFirstEllipsisLabel && (size == 1 || dims[d] == 1);
      if (size >= 0 && size != dims[d] && !broadcasts) {
        return ctx.Error("a label has sizes ", size, " and ", dims[d], " in '", equation, "'");
      }
      size = std::max(size, dims[d]);
    }
    all_labels.push_back(labels);
    operands.push_back(Operand{ctx.input(i), dims, std::move(labels)});
  }
  Labels output;
  if (arrow == std::string::npos) {
    output = ImplicitOutput(all_labels);
  } else {
    // An output without the ellipsis sums over its dims, as numpy does.
    ASSIGN_OR_RETURN(const Term term, ParseTerm(ctx, equation.substr(arrow + 2)));
    output = ExpandTerm(term, term.ellipsis_at ? widest : 0, widest);
    for (int label : output) {
      if (std::count(output.begin(), output.end(), label) > 1 ||
          sizes[static_cast<size_t>(label)] < 0) {
        return ctx.Error("the output of '", equation,
                         "' repeats a label or names one no input has");
      }
    }
  }
  EinsumEmitter emit(ctx, dtype);
  // A label repeated within one term takes that operand's diagonal first.
  for (size_t i = 0; i < operands.size(); ++i) {
    for (int label = 0; label < kFirstEllipsisLabel; ++label) {
      if (std::count(operands[i].labels.begin(), operands[i].labels.end(), label) < 2) continue;
      ASSIGN_OR_RETURN(operands[i], emit.Diagonal(absl::StrCat("diagonal", i, "_", label),
                                                  std::move(operands[i]), label));
    }
  }
  Operand result = operands[0];
  for (size_t i = 1; i <= operands.size(); ++i) {
    // The labels needed after this step: the output's and later operands'.
    Labels needed = output;
    for (size_t j = i + 1; j < operands.size(); ++j) {
      needed.insert(needed.end(), operands[j].labels.begin(), operands[j].labels.end());
    }
    if (i == operands.size()) {
      Labels drop;
      for (int label : result.labels) {
        if (!Has(needed, label)) drop.push_back(label);
      }
      ASSIGN_OR_RETURN(result, emit.SumOut("sum", std::move(result), drop));
      break;
    }
    ASSIGN_OR_RETURN(result, ContractPair(emit, absl::StrCat("pair", i, "_"), std::move(result),
                                          operands[i], needed));
  }
  ASSIGN_OR_RETURN(result, emit.Permute("output", std::move(result), output));
  return emit.Finish(0);
}

}  // namespace

void AddEinsumOp(std::vector<OpDef>& ops) {
  ops.push_back(OpDef{.name = "Einsum",
                      .family = "linear_algebra",
                      .since_opset = 12,
                      .attributes = {"equation"},
                      .arity = {{1, {1, kVariadicInputs}}},
                      .bind = BindEinsum,
                      .summary = "float types; bound as ReduceSum, Transpose, Reshape, Slice and "
                                 "MatMul (Note [Einsum lowering])"});
}

}  // namespace graphserve
