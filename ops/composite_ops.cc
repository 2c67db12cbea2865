// Composite ops: one node standing for a whole fusion group. Each has a
// decomposition into primitive ops (ops/decompositions.h, the ATen reference
// path) and, on the devices in `fused_devices`, a one-pass kernel of Tally's
// (ops/fused/). The `fuse` pass keeps a composite where its kernel exists and
// decomposes it everywhere else.
#include "absl/strings/str_cat.h"
#include "ops/confmat_parts.h"
#include "ops/op_registry.h"
#include "support/status_macros.h"

namespace tally::ops {
namespace {

using ir::Dim;
using ir::DType;
using ir::TensorType;
using Types = absl::StatusOr<std::vector<TensorType>>;

// McOperands is what mc_confmat and mc_marginals read past (preds, target):
// the weight (index 2, when present) and the group ids (the last operand,
// when num_groups is set).
struct McOperands {
  const TensorType* weight = nullptr;
  const TensorType* groups = nullptr;
  int64_t num_groups = 0;
};

absl::StatusOr<McOperands> McOperandsOf(const std::vector<TensorType>& in, const Opt<int64_t>& num_groups) {
  McOperands o;
  size_t end = in.size();
  if (num_groups.has_value()) {
    o.num_groups = num_groups.get();
    if (o.num_groups < 1 || end < 3) return absl::InvalidArgumentError("num_groups needs G >= 1 and a groups operand");
    o.groups = &in[--end];
  }
  if (end > 3) return absl::InvalidArgumentError("too many operands");
  if (end == 3) o.weight = &in[2];
  return o;
}

// InferMcConfmat types mc_confmat: (confmat i64[C, C], bad_target i64[],
// bad_preds i64[]); f64 counts when weighted, a leading [G] when grouped.
Types InferMcConfmat(const std::vector<TensorType>& in, int64_t c, const Opt<int64_t>& num_groups) {
  const TensorType& p = in[0];
  const TensorType& t = in[1];
  if (!ir::IsIntegral(t.dtype) || t.rank() != 1) return absl::InvalidArgumentError("target must be integer [N]");
  bool scores = ir::IsFloating(p.dtype) && p.rank() == 2 && p.shape[1] == Dim::Fixed(c) && p.shape[0] == t.shape[0];
  bool labels = ir::IsIntegral(p.dtype) && p.rank() == 1 && p.shape[0] == t.shape[0];
  if (!scores && !labels) {
    return absl::InvalidArgumentError(
        absl::StrCat("preds must be float [N, ", c, "] or integer [N], got ", p.ToString()));
  }
  TALLY_ASSIGN_OR_RETURN(McOperands o, McOperandsOf(in, num_groups));
  DType counts = DType::kInt64;
  if (o.weight != nullptr) {
    if (!ir::IsFloating(o.weight->dtype) || o.weight->rank() != 1 || o.weight->shape[0] != t.shape[0]) {
      return absl::InvalidArgumentError(absl::StrCat("weight must be float [N], got ", o.weight->ToString()));
    }
    counts = DType::kFloat64;
  }
  TensorType cm{counts, {Dim::Fixed(c), Dim::Fixed(c)}, t.device};
  if (o.groups != nullptr) {
    if (!ir::IsIntegral(o.groups->dtype) || o.groups->rank() != 1 || o.groups->shape[0] != t.shape[0]) {
      return absl::InvalidArgumentError(absl::StrCat("groups must be integer [N], got ", o.groups->ToString()));
    }
    cm.shape.insert(cm.shape.begin(), Dim::Fixed(o.num_groups));
  }
  TensorType count{DType::kInt64, {}, t.device};
  return std::vector<TensorType>{cm, count, count};
}

}  // namespace

void RegisterCompositeOps(OpTable& t) {
  // mc_confmat(preds, target[, weight][, groups]) {num_classes=C[, ignore_index][, num_groups=G]}:
  //   preds f32/f64 [N, C] scores (argmax) or i32/i64 [N] labels; target
  //   i32/i64 [N]. Rows whose target is ignore_index are dropped; rows with a
  //   target (or label pred) outside [0, C) are dropped and counted.
  //   -> (confmat i64[C, C] indexed [target][pred], bad_target i64[], bad_preds i64[])
  //   With weight (float [N]) a row adds its weight, a negative, NaN or
  //   infinite one as 0: confmat f64. With num_groups = G and groups
  //   (integer [N]) each row counts in its group's matrix, [G, C, C]; a row
  //   whose id is outside [0, G) in none.
  OpDef d;
  d.id = OpId::kMcConfmat;
  d.min_inputs = 2;
  d.max_inputs = 4;
  d.attrs = SpecsOf<McConfmatAttrs>();
  d.traits.composite = true;
  d.fused_devices = {"cpu", "meta"};
  d.infer = [](const std::vector<TensorType>& in, const ir::AttrMap& a, const ir::Device&) -> Types {
    const auto attrs = AttrsOf<McConfmatAttrs>(a);
    return InferMcConfmat(in, attrs.num_classes, attrs.num_groups);
  };
  AddOp(t, d);

  {
    // mc_marginals(preds, target[, weight]) {num_classes=C, parts="tp,target,..."[, ignore_index]}:
    //   mc_confmat's rows, labels and checks, keeping only per-class
    //   statistics of the C x C matrix instead of the matrix. Each part is a
    //   row of the result, in the order `parts` lists them:
    //     tp       rows with target == pred == c        (the diagonal)
    //     target   rows with target == c                (row sums)
    //     pred     rows with pred == c                  (column sums)
    //     abs_err  sum of |target - pred| over target == c   (Σ_j |c-j| cm[c][j])
    //     sq_err   sum of (target - pred)^2 over target == c (Σ_j (c-j)^2 cm[c][j])
    //   -> (marginals i64[P, C], bad_target i64[], bad_preds i64[]); with
    //   totals=true each part's sum over the classes, i64[P] (micro averages).
    //   Weights and groups as mc_confmat's ([G, P, C] or [G, P]).
    // The narrow-states pass makes it from an mc_confmat whose matrix is read
    // only through confmat_part.
    OpDef mm;
    mm.id = OpId::kMcMarginals;
    mm.min_inputs = 2;
    mm.max_inputs = 4;  // weighted and grouped as mc_confmat
    mm.attrs = SpecsOf<McMarginalsAttrs>();
    mm.traits.composite = true;
    mm.fused_devices = {"cpu", "meta"};
    mm.infer = [](const std::vector<TensorType>& in, const ir::AttrMap& a, const ir::Device&) -> Types {
      const auto attrs = AttrsOf<McMarginalsAttrs>(a);
      TALLY_ASSIGN_OR_RETURN(std::vector<TensorType> cm, InferMcConfmat(in, attrs.num_classes, attrs.num_groups));
      TALLY_ASSIGN_OR_RETURN(std::vector<ConfmatPart> parts, ParseConfmatParts(attrs.parts));
      const bool totals = attrs.totals.get();
      // [P, C] (or [P] with totals) in place of the matrix's [C, C].
      cm[0].shape.pop_back();
      cm[0].shape.back() = Dim::Fixed(static_cast<int64_t>(parts.size()));
      if (!totals) cm[0].shape.push_back(Dim::Fixed(attrs.num_classes));
      return cm;
    };
    AddOp(t, mm);
  }

  {
    // count_outside(x) {low, high}: i64[], the elements of x (numbers, any
    //   shape) outside [low, high), NaN included, compared in float64: a
    //   range check (the weights', the group ids') in one read.
    OpDef co;
    co.id = OpId::kCountOutside;
    co.min_inputs = co.max_inputs = 1;
    co.attrs = SpecsOf<CountOutsideAttrs>();
    co.traits.composite = true;
    co.fused_devices = {"cpu", "meta"};
    co.infer = [](const std::vector<TensorType>& in, const ir::AttrMap&, const ir::Device&) -> Types {
      if (in[0].dtype == DType::kBool) return absl::InvalidArgumentError("expects numbers, got bool");
      return std::vector<TensorType>{{DType::kInt64, {}, in[0].device}};
    };
    AddOp(t, co);
  }

  {
    // score_code16(x) {format="fp16"|"bf16"}: each value rounded to float16
    //   (or bfloat16) as an i64 code in [0, 65536) that orders as the values
    //   do: -0 codes as +0, every NaN as 65535 (the largest). Exact for values
    //   the format holds; the exact16 curves count rows per code. The fused
    //   kernel reads the bits; the decomposition computes them (exponent by
    //   bucketize against powers of two, all exact in float64).
    OpDef sc;
    sc.id = OpId::kScoreCode16;
    sc.min_inputs = sc.max_inputs = 1;
    sc.attrs = SpecsOf<ScoreCode16Attrs>();
    sc.traits.composite = true;
    sc.fused_devices = {"cpu", "meta"};
    sc.infer = [](const std::vector<TensorType>& in, const ir::AttrMap& a, const ir::Device&) -> Types {
      const std::string f = AttrsOf<ScoreCode16Attrs>(a).format;
      if (f != "fp16" && f != "bf16") return absl::InvalidArgumentError("format must be fp16 or bf16");
      if (!ir::IsFloating(in[0].dtype)) return absl::InvalidArgumentError("expects floats");
      return std::vector<TensorType>{{DType::kInt64, in[0].shape, in[0].device}};
    };
    AddOp(t, sc);
  }

  {
    // code16_counts(probs, label) {format, classes=K}: the exact16 curves'
    //   batch counts, i64[K, 2, 65536] of (class, target, score_code16 of the
    //   probability). probs float and label i64 (1 positive, 0 negative, -1
    //   dropped) of one shape (N, ...); with K = 1 every element is class 0,
    //   else dim 1 (of size K) is the class.
    OpDef cc;
    cc.id = OpId::kCode16Counts;
    cc.min_inputs = cc.max_inputs = 2;
    cc.attrs = SpecsOf<Code16CountsAttrs>();
    cc.traits.composite = true;
    cc.fused_devices = {"cpu", "meta"};
    cc.infer = [](const std::vector<TensorType>& in, const ir::AttrMap& a, const ir::Device&) -> Types {
      const auto attrs = AttrsOf<Code16CountsAttrs>(a);
      const int64_t k = attrs.classes;
      const std::string& f = attrs.format;
      if (f != "fp16" && f != "bf16") return absl::InvalidArgumentError("format must be fp16 or bf16");
      if (!ir::IsFloating(in[0].dtype) || in[1].dtype != DType::kInt64 || in[0].shape != in[1].shape ||
          in[0].rank() < 1) {
        return absl::InvalidArgumentError(absl::StrCat("expects float probs and i64 labels of one shape, got ",
                                                       in[0].ToString(), " and ", in[1].ToString()));
      }
      if (k < 1 || (k > 1 && (in[0].rank() < 2 || in[0].shape[1] != Dim::Fixed(k)))) {
        return absl::InvalidArgumentError(absl::StrCat("classes=", k, " must be 1 or dim 1 of ", in[0].ToString()));
      }
      return std::vector<TensorType>{{DType::kInt64, {Dim::Fixed(k), Dim::Fixed(2), Dim::Fixed(65536)}, in[0].device}};
    };
    AddOp(t, cc);
  }

  {
    // binary_rank_stats(scores, positive): the statistics of the exact binary
    //   AUROC and average precision over accumulated rows: scores f32/f64 [R]
    //   (a score < 0 marks a dropped row; NaN counts as +inf), positive i1[R].
    //   -> (n_pos i64[], n_neg i64[], u f64[] (pairs ordered right, a tie one
    //       half), precision_sum f64[] (over positives, the precision at
    //       their score))
    OpDef rs;
    rs.id = OpId::kBinaryRankStats;
    rs.min_inputs = rs.max_inputs = 2;
    rs.traits.composite = true;
    rs.fused_devices = {"cpu", "meta"};
    rs.infer = [](const std::vector<TensorType>& in, const ir::AttrMap&, const ir::Device&) -> Types {
      const TensorType& s = in[0];
      const TensorType& p = in[1];
      if (!ir::IsFloating(s.dtype) || s.rank() != 1 || p.dtype != DType::kBool || p.rank() != 1 || p.shape != s.shape) {
        return absl::InvalidArgumentError(
            absl::StrCat("expects float scores [R] and bool positive [R], got ", s.ToString(), " and ", p.ToString()));
      }
      TensorType count{DType::kInt64, {}, s.device};
      TensorType sum{DType::kFloat64, {}, s.device};
      return std::vector<TensorType>{count, count, sum, sum};
    };
    AddOp(t, rs);
  }

  {
    // confmat_part(cm) {part}: one per-class statistic of a C x C confusion
    //   matrix cm[target][pred] (i64 or f64), as mc_marginals names them:
    //   tp (diagonal), target (row sums), pred (column sums), abs_err, sq_err.
    //   -> [C] of cm's dtype
    // Finalize graphs read a matrix through it, so that narrow-states can
    // tell a matrix read only through its marginals (and then keep only
    // those) from one read whole. No kernel: its decomposition is the
    // reference, and after narrowing it is a select of a marginals row.
    OpDef cp;
    cp.id = OpId::kConfmatPart;
    cp.min_inputs = cp.max_inputs = 1;
    cp.attrs = SpecsOf<ConfmatPartAttrs>();
    cp.traits.composite = true;
    cp.infer = [](const std::vector<TensorType>& in, const ir::AttrMap& a, const ir::Device&) -> Types {
      const TensorType& cm = in[0];
      if (cm.rank() != 2 || cm.shape[0] != cm.shape[1] || cm.shape[0].is_symbolic() || cm.dtype == DType::kBool) {
        return absl::InvalidArgumentError(absl::StrCat("expects a numeric [C, C] matrix, got ", cm.ToString()));
      }
      const std::string part = AttrsOf<ConfmatPartAttrs>(a).part;
      TALLY_RETURN_IF_ERROR(ParseConfmatParts(part).status());
      if (part.find(',') != std::string::npos) {
        return absl::InvalidArgumentError("part names one statistic");
      }
      return std::vector<TensorType>{{cm.dtype, {cm.shape[0]}, cm.device}};
    };
    AddOp(t, cp);
  }

  {
    // bl_confmat(preds, target) {threshold, logits_over_kept[, ignore_index]}:
    //   binary preds/target [N] or multilabel [N, L] of one shape; preds
    //   f32/f64 probabilities or logits (sigmoided when any element, or with
    //   logits_over_kept any element whose target is not ignore_index, is
    //   outside [0, 1] or NaN; then `> threshold` in the preds dtype), or
    //   i32/i64/i1 labels; target i32/i64/i1. Elements whose target is
    //   ignore_index are dropped; rows with a target or int label other than
    //   0/1 are dropped and those values counted.
    //   -> (confmat i64[2, 2] for [N] inputs, i64[L, 2, 2] for [N, L], indexed
    //       [label][target][pred]; bad_target i64[]; bad_preds i64[])
    // The binary confmat keeps the binary metrics' state shape, so their
    // update is this one node (no reshape after it).
    OpDef bl;
    bl.id = OpId::kBlConfmat;
    bl.min_inputs = bl.max_inputs = 2;
    bl.attrs = SpecsOf<BlConfmatAttrs>();
    bl.traits.composite = true;
    bl.fused_devices = {"cpu", "meta"};
    bl.infer = [](const std::vector<TensorType>& in, const ir::AttrMap&, const ir::Device&) -> Types {
      const TensorType& p = in[0];
      const TensorType& t = in[1];
      if (ir::IsFloating(t.dtype) || (t.rank() != 1 && t.rank() != 2)) {
        return absl::InvalidArgumentError(
            absl::StrCat("target must be integer or bool [N] or [N, L], got ", t.ToString()));
      }
      if (p.shape != t.shape) {
        return absl::InvalidArgumentError(
            absl::StrCat("preds must have target's shape ", t.ToString(), ", got ", p.ToString()));
      }
      if (t.rank() == 2 && t.shape[1].is_symbolic()) return absl::InvalidArgumentError("the label dim must be fixed");
      std::vector<Dim> shape{Dim::Fixed(2), Dim::Fixed(2)};
      if (t.rank() == 2) shape.insert(shape.begin(), t.shape[1]);
      TensorType cm{DType::kInt64, shape, t.device};
      TensorType count{DType::kInt64, {}, t.device};
      return std::vector<TensorType>{cm, count, count};
    };
    AddOp(t, bl);
  }

  {
    // reg_stats(preds, target): the per-batch statistics of the regression
    //   metrics. preds, target f32/f64 (each) of one shape [N] or [N, D] (a
    //   1-D input is one column); per column the moments of
    //   metrics/regression/moments.h for preds, target and the error
    //   target − preds, their co-moment, and the float64 error sums.
    //   -> (n i64[];
    //       f64[D]: mean_preds, mean_lo_preds, m2_preds,
    //               mean_target, mean_lo_target, m2_target,
    //               mean_error, mean_lo_error, m2_error,
    //               c_preds_target, Σ(preds − target)², Σ|preds − target|;
    //       f64[]: the two error sums over every element)
    // No attributes when built: every regression metric of a collection
    // shares the node. `fuse` then sets error_moments=false when no metric
    // reads the error's moments (results 7..9, zeros then), which skips a
    // third of the kernel's work.
    OpDef rs;
    rs.id = OpId::kRegStats;
    rs.min_inputs = rs.max_inputs = 2;
    rs.attrs = SpecsOf<RegStatsAttrs>();
    rs.prune = [](ir::Node& n, const std::vector<bool>& live) {
      auto attrs = AttrsOf<RegStatsAttrs>(n);
      if (live[7] || live[8] || live[9] || !attrs.error_moments.get()) return false;
      attrs.error_moments = false;
      SetAttrs(n, attrs);
      return true;
    };
    rs.traits.composite = true;
    rs.fused_devices = {"cpu", "meta"};
    rs.infer = [](const std::vector<TensorType>& in, const ir::AttrMap&, const ir::Device&) -> Types {
      const TensorType& p = in[0];
      const TensorType& t = in[1];
      for (const TensorType* x : {&p, &t}) {
        if (!ir::IsFloating(x->dtype) || (x->rank() != 1 && x->rank() != 2)) {
          return absl::InvalidArgumentError(absl::StrCat("inputs must be f32/f64 [N] or [N, D], got ", x->ToString()));
        }
      }
      if (p.shape != t.shape) {
        return absl::InvalidArgumentError(
            absl::StrCat("target ", t.ToString(), " must have the shape of preds ", p.ToString()));
      }
      if (p.rank() == 2 && p.shape[1].is_symbolic()) return absl::InvalidArgumentError("the column dim must be fixed");
      Dim d = p.rank() == 2 ? p.shape[1] : Dim::Fixed(1);
      std::vector<TensorType> out{TensorType{DType::kInt64, {}, p.device}};
      for (int k = 0; k < 12; ++k) out.push_back(TensorType{DType::kFloat64, {d}, p.device});
      out.push_back(TensorType{DType::kFloat64, {}, p.device});
      out.push_back(TensorType{DType::kFloat64, {}, p.device});
      return out;
    };
    AddOp(t, rs);
  }

  {
    // moments_merge(states...) {variables=V[, pairs=[a0, b0, a1, b1, ...]]}:
    //   the fold of two states of a group of centred moments
    //   (metrics/regression/moments.h). Side A then side B, each: the row
    //   count i64[] (or, weighted, the weight sum f64[]), per variable mean,
    //   mean_lo, m2 (f64[d] each), per pair of variables (a_k, b_k) the
    //   co-moment f64[d].
    //   -> the merged side, in the same order
    OpDef mm;
    mm.id = OpId::kMomentsMerge;
    mm.min_inputs = 2;
    mm.max_inputs = -1;
    mm.attrs = SpecsOf<MomentsMergeAttrs>();
    mm.traits.composite = true;
    mm.fused_devices = {"cpu", "meta"};
    mm.infer = [](const std::vector<TensorType>& in, const ir::AttrMap& a, const ir::Device&) -> Types {
      const auto attrs = AttrsOf<MomentsMergeAttrs>(a);
      const int64_t vars = attrs.variables;
      const std::vector<int64_t>& pairs = attrs.pairs.get();
      if (vars < 0 || pairs.size() % 2 != 0) return absl::InvalidArgumentError("bad variables or pairs");
      for (int64_t v : pairs) {
        if (v < 0 || v >= vars) return absl::InvalidArgumentError(absl::StrCat("pair variable ", v, " out of range"));
      }
      const size_t side = 1 + 3 * vars + pairs.size() / 2;
      if (in.size() != 2 * side) {
        return absl::InvalidArgumentError(absl::StrCat("expected ", 2 * side, " states, got ", in.size()));
      }
      for (size_t i = 0; i < in.size(); ++i) {
        bool count = i % side == 0;
        bool ok = count ? (in[i].dtype == DType::kInt64 || in[i].dtype == DType::kFloat64) &&
                              in[i].dtype == in[0].dtype && in[i].rank() == 0
                        : in[i].dtype == DType::kFloat64 && in[i].rank() == 1 && in[i].shape == in[1].shape &&
                              !in[i].shape[0].is_symbolic();
        if (!ok) {
          return absl::InvalidArgumentError(absl::StrCat("state ", i, " must be ",
                                                         count ? "i64[] or f64[] (both sides alike)" : "f64[d]",
                                                         ", got ", in[i].ToString()));
        }
      }
      return std::vector<TensorType>(in.begin(), in.begin() + side);
    };
    AddOp(t, mm);
  }
}

}  // namespace tally::ops
