#include "engine/dsl/replicate.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "ops/attrs.h"
#include "ops/decompositions.h"
#include "ops/graph_builder.h"
#include "ops/op_list.h"
#include "support/status_macros.h"

namespace tally::dsl {
namespace {

using ops::Expr;
using ops::OpId;

bool IsRowDim(const ir::Dim& d) { return d.is_symbolic() && d.symbol == "N"; }
bool HasRows(const ir::Value* v) { return !v->type().shape.empty() && IsRowDim(v->type().shape[0]); }

// Product of a shape's dims from `from` on; -1 if one is symbolic.
int64_t FixedProduct(const ir::Shape& s, size_t from) {
  int64_t p = 1;
  for (size_t i = from; i < s.size(); ++i) {
    if (s[i].is_symbolic()) return -1;
    p *= s[i].size;
  }
  return p;
}

bool IsElementwise(OpId id) {
  switch (id) {
    case OpId::kAdd:
    case OpId::kSub:
    case OpId::kMul:
    case OpId::kDiv:
    case OpId::kPow:
    case OpId::kMaximum:
    case OpId::kMinimum:
    case OpId::kSafeDiv:
    case OpId::kEq:
    case OpId::kNe:
    case OpId::kLt:
    case OpId::kLe:
    case OpId::kGt:
    case OpId::kGe:
    case OpId::kLogicalAnd:
    case OpId::kLogicalOr:
    case OpId::kLogicalXor:
    case OpId::kLogicalNot:
    case OpId::kIsnan:
    case OpId::kNeg:
    case OpId::kAbs:
    case OpId::kExp:
    case OpId::kLog:
    case OpId::kSqrt:
    case OpId::kAcos:
    case OpId::kSigmoid:
    case OpId::kLogCosh:
    case OpId::kClamp:
    case OpId::kCast:
    case OpId::kWhere:
    case OpId::kFullLike:
      return true;
    default:
      return false;
  }
}

// Normalizes a dim attribute against `rank`.
int64_t NormDim(int64_t d, int64_t rank) { return d < 0 ? d + rank : d; }

// ShiftedAttrs: the attributes of node `n` (op `id`) for the same op over
// values with a new leading axis of size k — dims shift by one, a reshape
// gains k, a reduction over every dim names them — or nullopt for an op
// outside this list (elementwise ops keep theirs; others are the caller's).
std::optional<ir::AttrMap> ShiftedAttrs(const ir::Node& n, OpId id, int64_t k) {
  auto shift = [](int64_t d) { return d >= 0 ? d + 1 : d; };
  switch (id) {
    case OpId::kReshape: {
      auto a = ops::AttrsOf<ops::ReshapeAttrs>(n);
      a.shape.insert(a.shape.begin(), k);
      return ops::ToAttrMap(a);
    }
    case OpId::kUnsqueeze:
    case OpId::kSqueeze:
    case OpId::kCumsum:
    case OpId::kSoftmax:
    case OpId::kSize: {
      auto a = ops::AttrsOf<ops::DimAttrs>(n);
      a.dim = shift(a.dim);
      return ops::ToAttrMap(a);
    }
    case OpId::kArgmax: {
      auto a = ops::AttrsOf<ops::ArgmaxAttrs>(n);
      a.dim = shift(a.dim);
      return ops::ToAttrMap(a);
    }
    case OpId::kSelect: {
      auto a = ops::AttrsOf<ops::SelectAttrs>(n);
      a.dim = shift(a.dim);
      return ops::ToAttrMap(a);
    }
    case OpId::kTranspose: {
      auto a = ops::AttrsOf<ops::TransposeAttrs>(n);
      a.dim0 = shift(a.dim0);
      a.dim1 = shift(a.dim1);
      return ops::ToAttrMap(a);
    }
    case OpId::kSort: {
      auto a = ops::AttrsOf<ops::SortAttrs>(n);
      a.dim = shift(a.dim);
      return ops::ToAttrMap(a);
    }
    case OpId::kReduceSum:
    case OpId::kReduceMax:
    case OpId::kReduceMin:
    case OpId::kReduceAny:
    case OpId::kReduceAll: {
      auto a = ops::AttrsOf<ops::ReduceAttrs>(n);
      std::vector<int64_t> dims = a.dims.get();
      if (!a.dims.has_value()) {
        dims.clear();
        for (int64_t d = 0; d < n.input(0)->type().rank(); ++d) dims.push_back(d);
      }
      for (int64_t& d : dims) d = shift(d);
      a.dims = dims;
      return ops::ToAttrMap(a);
    }
    default:
      return std::nullopt;
  }
}

// Padded is replicated value `x` ([K, ...]) with dims added after the
// replica axis up to logical rank `r`, so that it broadcasts per replica
// against wider operands ([K] with [K, d]: a count dividing column sums).
Expr Padded(Expr x, int64_t r) {
  while (x.rank() - 1 < r) x = ops::Unsqueeze(x, 1);
  return x;
}

// Broadcast is k copies of a value every replica shares: [k, ...].
Expr Broadcast(Expr v, int64_t k) {
  std::vector<int64_t> shape = {k};
  for (int64_t i = 0; i < v.rank(); ++i) shape.push_back(1);
  const bool flag = v.dtype() == ir::DType::kBool;
  Expr r = ops::Unsqueeze(v, 0) + ops::Full(v, shape, 0.0, flag ? ir::DType::kInt64 : v.dtype());
  return flag ? ops::Cast(r, ir::DType::kBool) : r;
}

// RemoveUnused drops the nodes none of whose results is used.
void RemoveUnused(ir::Graph& g) {
  for (bool changed = true; changed;) {
    std::vector<int> uses = g.UseCounts();
    changed = g.RemoveNodesIf([&](const ir::Node* n) {
      for (ir::Value* o : n->outputs()) {
        if (uses[o->id()] > 0) return false;
      }
      return true;
    }) > 0;
  }
}

// RowInfo says how a value of the update graph relates to the batch's rows.
struct RowInfo {
  bool tainted = false;    // depends on a row input
  bool row_local = false;  // element e belongs to row e / per_row, and only depends on that row (and batch values)
  bool mixed = false;      // has rows, but mixes them (sorted, gathered, ...)
  bool on_stats = false;   // row_local, and reads a value reduced over the rows (a batch mean that centres them)
  int64_t per_row = 0;     // elements per row, when row_local
};

class Replicator {
 public:
  Replicator(Metric& m, const ReplicaSpec& spec, const ir::Device& device)
      : m_(m), spec_(spec), b_(m.name, device), g_(*m.module->update) {}

  absl::Status Run(const Signature& sig);

 private:
  absl::Status Decompose();
  void Analyze();
  bool RowLocalOp(const ir::Node& n) const;
  absl::StatusOr<ir::Value*> Rewrite(ir::Value* v);
  absl::StatusOr<ir::Value*> RowValue(ir::Value* v);
  absl::StatusOr<Expr> PerRow(Expr stat, int64_t rank);
  absl::Status BatchMerges();
  absl::StatusOr<ir::Value*> ReplicaReduce(Expr idx, Expr weights, int64_t size, int64_t per_row,
                                           const ir::TensorType& out);
  absl::StatusOr<ir::Value*> GroupExtreme(ir::Node& n, ir::Value* v, bool is_max);
  // ElementKeys is each element's row key for a flattened row value of
  // `per_row` elements a row.
  Expr ElementKeys(int64_t per_row) {
    if (per_row <= 1) return key_;
    return ops::Flatten(ops::Unsqueeze(key_, 1) + ops::Full(key_, {1, per_row}, 0.0, ir::DType::kInt64));
  }
  absl::StatusOr<ir::Value*> RewritePost(ir::Node& n, ir::Value* v);
  absl::Status Finalize(const absl::flat_hash_map<std::string, std::string>& companions);
  absl::Status Unsupported(const std::string& what) const {
    return absl::UnimplementedError(absl::StrCat(m_.name, ": ", spec_.arg_name, " is not supported here: ", what));
  }
  Expr W(ir::Value* v) { return b_.Wrap(&g_, v); }

  Metric& m_;
  const ReplicaSpec& spec_;
  ops::GraphBuilder b_;
  ir::Graph& g_;
  Expr key_;
  absl::flat_hash_map<const ir::Value*, RowInfo> info_;
  absl::flat_hash_map<const ir::Value*, ir::Value*> done_;
  absl::flat_hash_map<const ir::Value*, ir::Value*> rows_done_;
  // The merge graphs as the metric built them (one replica's states), for
  // the overall value's fold over the groups.
  std::map<std::string, std::unique_ptr<ir::Graph>> merges_;
  // Batch values every replica reads as they are (centring shifts).
  absl::flat_hash_set<const ir::Value*> shared_;
};

// Grouped is whether node `n` takes the group ids itself (its last operand,
// with num_groups): an mc_confmat or mc_marginals over the batch's rows, one
// per row, counts each row in its group's matrix in its one fused pass; a
// bootstrap's replica_histogram (num_bootstraps is applied first) counts
// each group's rows with the draws they have alone.
bool Grouped(const ir::Node& n, const ReplicaSpec& spec) {
  if (spec.kind != ReplicaSpec::Kind::kGroups) return false;
  if (ops::Is(n, OpId::kReplicaHistogram)) return true;
  if (!ops::Is(n, OpId::kMcConfmat) && !ops::Is(n, OpId::kMcMarginals)) return false;
  const ir::Value* target = n.input(1);
  return HasRows(target) && target->type().rank() == 1 && HasRows(n.input(0));
}

// DecomposeComposites replaces the composite ops of `g` (but those `keep`
// says) by their primitive ops, which the rewrite knows one by one; the
// decompositions' centring shifts go to `shifts` when given.
template <typename Keep>
absl::Status DecomposeComposites(ir::Graph& g, Keep keep, std::vector<const ir::Value*>* shifts = nullptr) {
  std::vector<ir::Node*> composites;
  for (const auto& n : g.nodes()) {
    std::optional<OpId> id = ops::IdOf(*n);
    if (id && ops::KindOf(*id) == ops::OpKind::kComposite && !keep(*n)) composites.push_back(n.get());
  }
  if (composites.empty()) return absl::OkStatus();
  absl::flat_hash_set<const ir::Node*> gone(composites.begin(), composites.end());
  for (ir::Node* n : composites) TALLY_RETURN_IF_ERROR(ops::Decompose(g, *n, shifts));
  g.RemoveNodesIf([&](const ir::Node* n) { return gone.contains(n); });
  g.TopologicalSort();
  return absl::OkStatus();
}

absl::Status Replicator::Decompose() {
  std::vector<const ir::Value*> shifts;
  TALLY_RETURN_IF_ERROR(DecomposeComposites(
      g_, [&](const ir::Node& n) { return Grouped(n, spec_); }, &shifts));
  // A bootstrap's replicas share the batch's centring shifts (each replica's
  // moments hold around any shift); slices keep each group's own, whose
  // means may lie far apart.
  if (spec_.kind != ReplicaSpec::Kind::kGroups) shared_.insert(shifts.begin(), shifts.end());
  return absl::OkStatus();
}

bool Replicator::RowLocalOp(const ir::Node& n) const {
  std::optional<OpId> id = ops::IdOf(n);
  if (!id) return false;
  const ir::Value* in0 = n.inputs().empty() ? nullptr : n.input(0);
  const int64_t rank = in0 ? in0->type().rank() : 0;
  auto dim_ok = [&](int64_t d) { return NormDim(d, rank) != 0; };
  if (IsElementwise(*id)) return true;
  switch (*id) {
    case OpId::kFlatten:
    case OpId::kOneHot:
      return true;
    case OpId::kReduceSum:
    case OpId::kReduceMax:
    case OpId::kReduceMin:
    case OpId::kReduceAny:
    case OpId::kReduceAll: {
      const auto a = ops::AttrsOf<ops::ReduceAttrs>(n);
      if (!a.dims.has_value()) return false;  // every dim
      const std::vector<int64_t>& dims = a.dims.get();
      return std::all_of(dims.begin(), dims.end(), dim_ok);
    }
    case OpId::kArgmax:
      return dim_ok(ops::AttrsOf<ops::ArgmaxAttrs>(n).dim);
    case OpId::kSoftmax:
    case OpId::kCumsum:
    case OpId::kUnsqueeze:
    case OpId::kSqueeze:
      return dim_ok(ops::AttrsOf<ops::DimAttrs>(n).dim) || *id == OpId::kUnsqueeze;
    case OpId::kSelect:
      return dim_ok(ops::AttrsOf<ops::SelectAttrs>(n).dim);
    case OpId::kTranspose: {
      const auto a = ops::AttrsOf<ops::TransposeAttrs>(n);
      return dim_ok(a.dim0) && dim_ok(a.dim1);
    }
    case OpId::kTopkMask:
      return rank >= 2;
    case OpId::kSearchsorted:  // (sorted, values): a batch-level table, row values
      return !info_.at(n.input(0)).row_local && !info_.at(n.input(0)).mixed;
    case OpId::kBucketize:  // (values, boundaries)
      return !info_.at(n.input(1)).row_local && !info_.at(n.input(1)).mixed;
    default:
      return false;
  }
}

void Replicator::Analyze() {
  for (ir::Value* p : g_.params()) {
    RowInfo r;
    if (HasRows(p)) {
      r.tainted = r.row_local = true;
      r.per_row = FixedProduct(p->type().shape, 1);
      if (r.per_row < 0) r = RowInfo{true, false, true, 0};
    }
    info_[p] = r;
  }
  for (const auto& n : g_.nodes()) {
    RowInfo r;
    const RowInfo* row_in = nullptr;
    bool any_rows = false, any_mixed = false, on_stats = false;
    for (ir::Value* v : n->inputs()) {
      const RowInfo& i = info_[v];
      r.tainted |= i.tainted;
      any_mixed |= i.mixed;
      on_stats |= i.on_stats || (i.tainted && !i.row_local && !i.mixed);
      if (i.row_local && row_in == nullptr) row_in = &i;
      any_rows |= i.row_local || i.mixed;
    }
    for (ir::Value* out : n->outputs()) {
      RowInfo o;
      o.tainted = r.tainted && !shared_.contains(out);
      const bool out_rows =
          HasRows(out) || (row_in != nullptr && !out->type().shape.empty() && out->type().shape[0].is_symbolic());
      if (any_rows && out_rows) {
        if (!any_mixed && RowLocalOp(*n)) {
          o.row_local = true;
          o.on_stats = on_stats;
          o.per_row = HasRows(out) ? FixedProduct(out->type().shape, 1) : row_in->per_row;
          if (ops::Is(*n, OpId::kFlatten)) o.per_row = row_in->per_row;
          if (o.per_row < 0) o = RowInfo{true, false, true, 0};
        } else {
          o.mixed = true;
        }
      }
      info_[out] = o;
    }
  }
}

absl::StatusOr<ir::Value*> Replicator::ReplicaReduce(Expr idx, Expr weights, int64_t size, int64_t per_row,
                                                     const ir::TensorType& out) {
  ops::ReplicaHistogramAttrs a;
  a.size = size;
  a.replicas = spec_.replicas;
  a.mode = spec_.kind == ReplicaSpec::Kind::kGroups ? "groups" : "poisson";
  a.seed = spec_.seed;
  a.block = per_row;
  std::vector<Expr> in = {idx, key_};
  if (weights.valid())
    in.push_back(weights.dtype() == ir::DType::kBool ? ops::Cast(weights, ir::DType::kInt64) : weights);
  Expr h = b_.Op(OpId::kReplicaHistogram, in, ops::ToAttrMap(a));
  std::vector<int64_t> shape = {spec_.replicas};
  for (const auto& d : out.shape) shape.push_back(d.size);
  Expr r = ops::Cast(ops::Reshape(h, shape), out.dtype);
  if (!b_.ok()) return b_.status();
  return r.value();
}

// GroupExtreme is a running max (min) of a row value per group: its elements
// sorted by (group, value descending, NaN first) with segment_sort, and each
// group's first element summed alone into its bucket (a sum of one value is
// that value); a group without elements gets the reducer's identity.
absl::StatusOr<ir::Value*> Replicator::GroupExtreme(ir::Node& n, ir::Value* v, bool is_max) {
  const int64_t per_row = info_[n.input(0)].per_row;
  TALLY_ASSIGN_OR_RETURN(ir::Value * xv, RowValue(n.input(0)));
  Expr x = ops::Cast(ops::Flatten(W(xv)), ir::DType::kFloat64);
  Expr group = ElementKeys(per_row);
  const auto g = static_cast<double>(spec_.replicas);
  group = ops::Where(group >= int64_t{0} && group < g, group, g);  // out of range: counted by the check, in no group
  std::vector<Expr> sorted = b_.OpN(OpId::kSegmentSort, {group, is_max ? x : -x}, {});
  if (sorted.size() != 2) return b_.status();
  Expr keys = sorted[0];
  Expr i = ops::Cumsum(ops::FullLike(keys, 1.0, ir::DType::kInt64), 0) - int64_t{1};
  Expr first = i == int64_t{0} || keys != ops::Take(keys, i - int64_t{1});
  Expr bucket = ops::Where(first, keys, int64_t{-1});
  Expr best = ops::Histogram(bucket, sorted[1], spec_.replicas);
  Expr seen = ops::Histogram(bucket, spec_.replicas);
  const double identity = is_max ? -INFINITY : INFINITY;
  Expr r = ops::Cast(ops::Where(seen > 0.0, is_max ? best : -best, identity), v->type().dtype);
  if (!b_.ok()) return b_.status();
  return r.value();
}

absl::StatusOr<ir::Value*> Replicator::Rewrite(ir::Value* v) {
  if (auto it = done_.find(v); it != done_.end()) return it->second;
  const RowInfo& i = info_[v];
  ir::Value* r = nullptr;
  if (!i.tainted) {
    r = Broadcast(W(v), spec_.replicas).value();
  } else if (i.row_local || i.mixed) {
    return Unsupported("a state holds values per row");
  } else {
    ir::Node* n = v->producer();
    if (n == nullptr) return absl::InternalError("a row value without producer");
    TALLY_ASSIGN_OR_RETURN(r, RewritePost(*n, v));
  }
  if (!b_.ok()) return b_.status();
  done_[v] = r;
  return r;
}

absl::StatusOr<ir::Value*> Replicator::RewritePost(ir::Node& n, ir::Value* v) {
  std::optional<OpId> id = ops::IdOf(n);
  if (!id) return Unsupported(absl::StrCat("op '", n.op(), "'"));
  // The row reductions.
  if (*id == OpId::kHistogram && info_[n.input(0)].row_local) {
    const RowInfo& ri = info_[n.input(0)];
    TALLY_ASSIGN_OR_RETURN(ir::Value * idx, RowValue(n.input(0)));
    Expr w;
    if (n.inputs().size() > 1) {
      // Weights that mix rows (a row reading its cluster's batch mean
      // through `take`) have no per-replica form: computed once from the
      // whole batch, they would weigh every replica alike.
      if (info_[n.input(1)].mixed) return Unsupported("a row reduction of values that mix the batch's rows");
      TALLY_ASSIGN_OR_RETURN(ir::Value * wv, RowValue(n.input(1)));
      w = W(wv);
    }
    return ReplicaReduce(W(idx), w, ops::AttrsOf<ops::HistogramAttrs>(n).size, ri.per_row, v->type());
  }
  if (*id == OpId::kSize && info_[n.input(0)].row_local && (HasRows(n.input(0)) || n.input(0)->type().rank() == 1) &&
      NormDim(ops::AttrsOf<ops::DimAttrs>(n).dim, n.input(0)->type().rank()) == 0) {
    // The batch's row count (a flattened row value's: its elements), per
    // replica: each row counts its draws (times its elements).
    Expr x = W(n.input(0));
    Expr zeros = ops::FullLike(x.rank() == 1 ? x : ops::Select(x, 1, 0), 0, ir::DType::kInt64);
    for (int64_t d = 2; d < x.rank(); ++d) zeros = ops::Select(zeros, 1, 0);
    return ReplicaReduce(zeros, Expr(), 1, HasRows(n.input(0)) ? 1 : info_[n.input(0)].per_row, v->type());
  }
  if (*id == OpId::kReduceSum && info_[n.input(0)].row_local) {
    TALLY_ASSIGN_OR_RETURN(ir::Value * xv, RowValue(n.input(0)));
    Expr x = W(xv);
    const RowInfo& ri = info_[n.input(0)];
    const int64_t rank = x.rank();
    std::vector<int64_t> dims = ops::AttrsOf<ops::ReduceAttrs>(n).dims.get();
    if (!ops::AttrsOf<ops::ReduceAttrs>(n).dims.has_value()) {
      dims.clear();
      for (int64_t d = 0; d < rank; ++d) dims.push_back(d);
    }
    for (int64_t& d : dims) d = NormDim(d, rank);
    if (!HasRows(n.input(0))) {
      // A flattened row value summed whole: one bucket.
      if (rank != 1) return Unsupported("a sum over part of a flattened row value");
      return ReplicaReduce(ops::FullLike(x, 0, ir::DType::kInt64), x, 1, ri.per_row, v->type());
    }
    std::vector<int64_t> rest;
    for (int64_t d : dims) {
      if (d != 0) rest.push_back(d);
    }
    Expr y = rest.empty() ? x : ops::Sum(x, rest);
    std::vector<int64_t> tail;
    for (int64_t d = 1; d < y.rank(); ++d) tail.push_back(y.type().shape[d].size);
    int64_t cells = 1;
    for (int64_t t : tail) cells *= t;
    Expr idx = ops::FullLike(y, 0, ir::DType::kInt64);
    if (!tail.empty()) idx = idx + ops::Reshape(ops::Arange(y, cells), tail);
    return ReplicaReduce(ops::Flatten(idx), ops::Flatten(y), cells, cells, v->type());
  }
  if ((*id == OpId::kReduceMax || *id == OpId::kReduceMin) && spec_.kind == ReplicaSpec::Kind::kGroups &&
      info_[n.input(0)].row_local && !ops::AttrsOf<ops::ReduceAttrs>(n).dims.has_value()) {
    return GroupExtreme(n, v, *id == OpId::kReduceMax);
  }
  if (Grouped(n, spec_)) {
    // The op counts per group: the group ids as its last operand. A fused
    // op's bad-value totals (the deferred checks) come from it too, so the
    // ungrouped node goes; a bootstrap's replica_histogram gives [G, B * size].
    if (*id == OpId::kReplicaHistogram) {
      const auto a = ops::AttrsOf<ops::ReplicaHistogramAttrs>(n);
      if (a.mode != "poisson" || a.num_groups.has_value()) return Unsupported("slices of slices");
    }
    if (v != n.output(0)) return Unsupported(absl::StrCat("a count of '", n.op(), "' in a state"));
    std::vector<Expr> in;
    for (ir::Value* x : n.inputs()) in.push_back(W(x));
    in.push_back(key_);
    ir::AttrMap attrs = n.attrs();
    attrs["num_groups"] = spec_.replicas;
    std::vector<Expr> outs = b_.OpN(*id, in, attrs);
    if (!b_.ok()) return b_.status();
    for (size_t i = 1; i < outs.size(); ++i) g_.ReplaceAllUsesWith(n.output(i), outs[i].value());
    return outs[0].value();
  }
  // What runs between the reductions and the partials: per replica, on
  // [K, ...] values (the shared ones broadcast from the right).
  std::vector<Expr> in;
  for (ir::Value* x : n.inputs()) {
    if (info_[x].tainted) {
      TALLY_ASSIGN_OR_RETURN(ir::Value * rx, Rewrite(x));
      in.push_back(W(rx));
    } else {
      in.push_back(W(x));
    }
  }
  if (n.outputs().size() != 1) return Unsupported(absl::StrCat("op '", n.op(), "' after a row reduction"));
  ir::AttrMap attrs = n.attrs();
  if (*id == OpId::kFlatten) {
    const int64_t p = FixedProduct(v->type().shape, 0);
    if (p < 0) return Unsupported("a flatten of a symbolic shape");
    ops::ReshapeAttrs a;
    a.shape = {spec_.replicas, p};
    return b_.Op(OpId::kReshape, in, ops::ToAttrMap(a)).value();
  }
  if (IsElementwise(*id)) {
    int64_t r = 0;
    for (ir::Value* x : n.inputs()) r = std::max(r, x->type().rank());
    for (size_t i = 0; i < in.size(); ++i) {
      if (info_[n.input(i)].tainted) in[i] = Padded(in[i], r);
    }
  } else {
    std::optional<ir::AttrMap> shifted = *id == OpId::kSize ? std::nullopt : ShiftedAttrs(n, *id, spec_.replicas);
    if (!shifted) return Unsupported(absl::StrCat("op '", n.op(), "' over the batch's rows"));
    attrs = *shifted;
  }
  Expr out = b_.Op(*id, in, attrs);
  if (!b_.ok()) return b_.status();
  return out.value();
}

// RowValue is row value `v` as its replica sees it. A batch statistic it
// reads (a value reduced over the rows: the batch mean that centres the rows
// of a two-pass variance) is that of the row's own group, gathered by its
// group id; a batch value that does not replicate (a decision over the whole
// batch, such as the logit test) stays the batch's. A bootstrap has no
// per-row replica to gather from: it refuses the first kind.
absl::StatusOr<ir::Value*> Replicator::RowValue(ir::Value* v) {
  const RowInfo& i = info_[v];
  if (!i.row_local || !i.on_stats) return v;
  if (auto it = rows_done_.find(v); it != rows_done_.end()) return it->second;
  ir::Node* n = v->producer();
  std::optional<OpId> id = n ? ops::IdOf(*n) : std::nullopt;
  if (!id || n->outputs().size() != 1) return absl::InternalError("a row value without a producer");
  std::vector<Expr> in;
  for (ir::Value* x : n->inputs()) {
    const RowInfo xi = info_[x];
    if (xi.row_local) {
      TALLY_ASSIGN_OR_RETURN(ir::Value * rx, RowValue(x));
      in.push_back(W(rx));
      continue;
    }
    absl::StatusOr<ir::Value*> stat = xi.tainted && !xi.mixed ? Rewrite(x) : absl::NotFoundError("shared");
    if (!stat.ok()) {
      in.push_back(W(x));
      continue;
    }
    if (spec_.kind != ReplicaSpec::Kind::kGroups) return Unsupported("a row value centred on a batch statistic");
    if (!IsElementwise(*id))
      return Unsupported(absl::StrCat("op '", n->op(), "' of a row value and a batch statistic"));
    TALLY_ASSIGN_OR_RETURN(Expr picked, PerRow(W(*stat), v->type().rank()));
    in.push_back(picked);
  }
  Expr out = b_.Op(*id, in, n->attrs());
  if (!b_.ok()) return b_.status();
  rows_done_[v] = out.value();
  return out.value();
}

// PerRow gathers each row's group's entry of `stat` ([K, S...], S of rank
// 0 or 1): [N, 1, ..., S...] of rank `rank`, broadcasting as the shared
// value did. Out-of-range ids (counted by the check, in no group) read
// group 0 and count nowhere.
absl::StatusOr<Expr> Replicator::PerRow(Expr stat, int64_t rank) {
  const int64_t m = FixedProduct(stat.type().shape, 1);
  if (m < 0 || stat.rank() > 2) return Unsupported("a batch statistic of rank > 1");
  Expr id = ops::Clamp(key_, 0.0, static_cast<double>(spec_.replicas - 1));
  Expr picked = stat.rank() == 1 ? ops::Take(stat, id)
                                 : ops::Take(ops::Flatten(stat),
                                             ops::Unsqueeze(id, 1) * static_cast<double>(m) + ops::Arange(stat, m));
  if (picked.rank() > rank) return Unsupported("a batch statistic wider than its rows");
  while (picked.rank() < rank) picked = ops::Unsqueeze(picked, 1);
  if (!b_.ok()) return b_.status();
  return picked;
}

absl::Status Replicator::Run(const Signature& sig) {
  ir::Module& mod = *m_.module;
  TALLY_RETURN_IF_ERROR(Decompose());
  // The key: each row's group, or its identity.
  ir::TensorType kt{ir::DType::kInt64, {ir::Dim::Symbol("N")}, b_.device()};
  for (const InputSpec& s : sig) {
    if (s.name != spec_.key_input) continue;
    if (s.shape.size() != 1 || !ir::IsIntegral(s.dtype)) {
      return absl::InvalidArgumentError(absl::StrCat(m_.name, ": ", s.name, ": expected one integer per row, got ",
                                                     ir::DTypeName(s.dtype), " of rank ", s.shape.size()));
    }
    kt.dtype = s.dtype;
  }
  if (spec_.kind == ReplicaSpec::Kind::kGroups &&
      std::none_of(sig.begin(), sig.end(), [&](const InputSpec& s) { return s.name == spec_.key_input; })) {
    return absl::InvalidArgumentError(
        absl::StrCat(m_.name, ": ", spec_.arg_name, " needs the input '", spec_.key_input, "' (one id per row)"));
  }
  ir::Value* key_param = g_.FindParam(spec_.key_input);
  if (key_param == nullptr) key_param = g_.AddParam(spec_.key_input, kt);
  key_ = ops::Cast(W(key_param), ir::DType::kInt64);
  Analyze();
  info_[key_.value()] = RowInfo{true, true, false, 1};

  TALLY_ASSIGN_OR_RETURN(std::vector<int> partial_index, mod.PartialIndices());
  auto& returns = g_.mutable_returns();
  absl::flat_hash_map<std::string, std::string> companions;  // cat state -> its group column
  std::vector<ir::StateDecl> added;
  std::vector<Expr> group_columns;  // what each added companion state accumulates
  for (size_t s = 0; s < mod.states.size(); ++s) {
    ir::StateDecl& decl = mod.states[s];
    if (!decl.check.empty()) continue;  // deferred checks stay global
    if (decl.scatter) return Unsupported(absl::StrCat("state '", decl.name, "' adds at the elements it names"));
    ir::Value* partial = returns[partial_index[s]].second;
    if (decl.reducer == ir::Reducer::kCat) {
      if (spec_.kind != ReplicaSpec::Kind::kGroups) {
        return Unsupported(absl::StrCat("state '", decl.name,
                                        "' keeps every row; bootstrap a fixed-size form (thresholds=, exact16)"));
      }
      // Whole rows, or a flattened row value (each element in its row's
      // group: the group column repeats each row's id per element).
      const RowInfo& pi = info_[partial];
      const bool flat = !HasRows(partial) && pi.row_local && partial->type().rank() == 1 && pi.per_row > 0;
      if (!flat && (!HasRows(partial) || !pi.row_local || FixedProduct(partial->type().shape, 1) < 0)) {
        return Unsupported(absl::StrCat("state '", decl.name, "' keeps values that are not one per row"));
      }
      ir::StateDecl c;
      c.name = decl.name + "_group";
      c.type = ir::TensorType{ir::DType::kInt64, {ir::Dim::Symbol("R")}, decl.type.device};
      c.reducer = ir::Reducer::kCat;
      c.metric = decl.metric;
      added.push_back(c);
      group_columns.push_back(flat ? ElementKeys(pi.per_row) : key_);
      companions[decl.name] = c.name;
      continue;
    }
    // A custom state (its group's merge graph batches below) is replicated
    // as a sum's is: each replica's partial from its own rows.
    // A running max/min slices (GroupExtreme); its bootstrap has no weighted form.
    const bool extreme = (decl.reducer == ir::Reducer::kMax || decl.reducer == ir::Reducer::kMin) &&
                         spec_.kind == ReplicaSpec::Kind::kGroups;
    if (decl.reducer != ir::Reducer::kSum && decl.reducer != ir::Reducer::kCustom && !extreme) {
      return Unsupported(absl::StrCat("state '", decl.name, "' is a running ", ir::ReducerName(decl.reducer)));
    }
    absl::StatusOr<ir::Value*> rewritten = Rewrite(partial);
    if (!rewritten.ok()) {
      return absl::Status(rewritten.status().code(),
                          absl::StrCat(rewritten.status().message(), " (state '", decl.name, "')"));
    }
    ir::Value* r = *rewritten;
    Expr rp = ops::Cast(W(r), decl.type.dtype);
    if (!b_.ok()) return b_.status();
    returns[partial_index[s]].second = rp.value();
    decl.type.shape.insert(decl.type.shape.begin(), ir::Dim::Fixed(spec_.replicas));
  }
  for (size_t i = 0; i < added.size(); ++i) {
    mod.states.push_back(added[i]);
    returns.emplace_back(added[i].name, group_columns[i].value());
  }
  if (spec_.kind == ReplicaSpec::Kind::kGroups) {
    int k = 0;
    for (const auto& st : mod.states) k += st.check.empty() ? 0 : 1;
    ir::StateDecl c;
    c.name = absl::StrCat("check", k);
    c.type = ir::TensorType{ir::DType::kInt64, {}, b_.device()};
    c.check = absl::StrCat(spec_.key_input, ": {n} group ids outside [0, ", spec_.replicas, ")");
    c.metric = m_.name;
    mod.states.push_back(c);
    Expr bad = ops::CountOutside(W(key_param), 0.0, static_cast<double>(spec_.replicas));
    if (!b_.ok()) return b_.status();
    returns.emplace_back(c.name, bad.value());
  }
  RemoveUnused(g_);  // what the rewrite replaced
  g_.TopologicalSort();
  TALLY_RETURN_IF_ERROR(BatchMerges());
  return Finalize(companions);
}

// Stack turns per-replica values into one [K, ...] value.
Expr Stack(const std::vector<Expr>& xs) {
  std::vector<Expr> rows;
  for (const Expr& x : xs) rows.push_back(ops::Unsqueeze(x, 0));
  return rows.size() == 1 ? rows[0] : ops::Concat(rows);
}

bool FixedShape(const ir::TensorType& t) {
  return std::none_of(t.shape.begin(), t.shape.end(), [](const ir::Dim& d) { return d.is_symbolic(); });
}

// Label of a result leaf under a new leading path item.
std::string Under(const std::string& label, int item) {
  std::string base;
  std::vector<int> path;
  ParsePartLabel(label, &base, &path);
  path.insert(path.begin(), item);
  return PartLabel(base, path);
}

// Batched runs a finalize graph once over states with a leading replica
// axis: each op on [K, ...] values (dims shifted by one; values every replica
// shares broadcast from the right). Unimplemented for an op it cannot batch
// (the caller then runs one copy of the graph per replica).
class Batched {
 public:
  Batched(ops::GraphBuilder& b, ir::Graph& f, int64_t k) : b_(b), f_(f), k_(k) {}

  absl::StatusOr<std::vector<std::pair<std::string, Expr>>> Run(
      const ir::Graph& old, const absl::flat_hash_map<const ir::Value*, std::pair<Expr, bool>>& params) {
    vals_ = params;
    for (const auto& n : old.nodes()) TALLY_RETURN_IF_ERROR(Node(*n));
    std::vector<std::pair<std::string, Expr>> out;
    for (const auto& [label, v] : old.returns()) {
      const auto& [x, batched] = vals_.at(v);
      if (!FixedShape(x.type())) return absl::UnimplementedError("a result of data-dependent length");
      out.emplace_back(label, batched ? x : Broadcast(x, k_));
    }
    if (!b_.ok()) return b_.status();
    return out;
  }

 private:
  // The value's shape without the replica axis.
  static int64_t LogicalRank(const Expr& x, bool batched) { return x.rank() - (batched ? 1 : 0); }

  absl::Status Node(const ir::Node& n) {
    std::vector<std::pair<Expr, bool>> in;
    bool any = false;
    for (ir::Value* v : n.inputs()) {
      in.push_back(vals_.at(v));
      any |= in.back().second;
    }
    std::optional<OpId> id = ops::IdOf(n);
    if (!id) return absl::UnimplementedError(n.op());
    std::vector<Expr> xs;
    for (const auto& [x, bt] : in) xs.push_back(x);
    if (!any) {
      std::vector<Expr> outs = b_.OpN(*id, xs, n.attrs(), ops::Loc::Current(), &f_);
      if (!b_.ok()) return b_.status();
      for (size_t i = 0; i < outs.size(); ++i) vals_[n.output(i)] = {outs[i], false};
      return absl::OkStatus();
    }
    ir::AttrMap attrs = n.attrs();
    bool out_batched = true;
    if (IsElementwise(*id)) {
      int64_t r = 0;
      for (const auto& [x, bt] : in) r = std::max(r, LogicalRank(x, bt));
      for (size_t i = 0; i < in.size(); ++i) {
        if (in[i].second) xs[i] = Padded(xs[i], r);
      }
    } else if (*id == OpId::kFlatten) {
      const int64_t p = FixedProduct(n.output(0)->type().shape, 0);
      if (p < 0) return absl::UnimplementedError("flatten of a symbolic shape");
      ops::ReshapeAttrs a;
      a.shape = {k_, p};
      vals_[n.output(0)] = {b_.Op(OpId::kReshape, xs, ops::ToAttrMap(a)), true};
      return b_.status();
    } else if (std::optional<ir::AttrMap> shifted = ShiftedAttrs(n, *id, k_)) {
      attrs = *shifted;
      out_batched = *id != OpId::kSize;  // every replica has the same shape
    } else if (*id == OpId::kTake) {
      // x[idx] per replica: gather from the flattened [K * M] values.
      Expr x = in[0].second ? xs[0] : Broadcast(xs[0], k_);
      const int64_t m = FixedProduct(x.type().shape, 1);
      if (m < 0) return absl::UnimplementedError("take from a symbolic shape");
      Expr idx = in[1].second ? xs[1] : Broadcast(xs[1], k_);
      Expr base = ops::Arange(idx, k_) * static_cast<double>(m);
      base = Padded(ops::Unsqueeze(base, 1), idx.rank() - 1);
      Expr picked = ops::Take(ops::Flatten(x), ops::Clamp(idx, 0, static_cast<double>(m - 1)) + base);
      vals_[n.output(0)] = {picked, true};
      return b_.status();
    } else if (*id == OpId::kConcat) {
      // Along the logical dim 0: swap it with the replica axis around the concat.
      std::vector<Expr> parts;
      for (const auto& [x, bt] : in) {
        Expr bx = bt ? x : Broadcast(x, k_);
        if (bx.rank() < 2) return absl::UnimplementedError("concat of scalars");
        parts.push_back(ops::Transpose(bx, 0, 1));
      }
      vals_[n.output(0)] = {ops::Transpose(ops::Concat(parts), 0, 1), true};
      return b_.status();
    } else if (*id == OpId::kAssertZero || *id == OpId::kSearchsorted) {
      if (in[0].second) return absl::UnimplementedError(absl::StrCat(n.op(), " of a replicated first operand"));
    } else if (*id == OpId::kBucketize) {
      if (in[1].second) return absl::UnimplementedError("bucketize into replicated boundaries");
    } else {
      return absl::UnimplementedError(n.op());
    }
    std::vector<Expr> outs = b_.OpN(*id, xs, attrs, ops::Loc::Current(), &f_);
    if (!b_.ok()) return b_.status();
    for (size_t i = 0; i < outs.size(); ++i) vals_[n.output(i)] = {outs[i], out_batched};
    return absl::OkStatus();
  }

  ops::GraphBuilder& b_;
  ir::Graph& f_;
  int64_t k_;
  absl::flat_hash_map<const ir::Value*, std::pair<Expr, bool>> vals_;
};

// BatchMerges rewrites each custom merge graph (moments_merge: its
// elementwise decomposition) to fold states with a leading replica axis, and
// keeps the graph as built for the overall fold.
absl::Status Replicator::BatchMerges() {
  ir::Module& mod = *m_.module;
  for (auto& [group, old] : mod.merges) {
    merges_[group] = old->Clone();
    TALLY_RETURN_IF_ERROR(DecomposeComposites(*old, [](const ir::Node&) { return false; }));
    auto merged = std::make_unique<ir::Graph>(old->name());
    ops::GraphBuilder tb(m_.name, b_.device());
    absl::flat_hash_map<const ir::Value*, std::pair<Expr, bool>> in;
    for (ir::Value* p : old->params()) {
      const ir::StateDecl* d = mod.FindState(p->name().substr(2));  // "a." / "b." + state
      if (d == nullptr) return absl::InternalError(absl::StrCat("merge parameter '", p->name(), "' names no state"));
      in[p] = {tb.Wrap(merged.get(), merged->AddParam(p->name(), d->type)), true};
    }
    Batched batched(tb, *merged, spec_.replicas);
    absl::StatusOr<std::vector<std::pair<std::string, Expr>>> run = batched.Run(*old, in);
    if (!run.ok()) return Unsupported(absl::StrCat("state merge of group '", group, "': ", run.status().message()));
    for (const auto& [label, x] : *run) merged->AddReturn(label, x.value());
    old = std::move(merged);
  }
  return absl::OkStatus();
}

// Rebuilt copies the nodes of `old` into `f` as CloneInto does, but through
// the builder, so that each result's type is inferred from the operands
// given (a copy's cat rows are a selection of another length).
absl::flat_hash_map<const ir::Value*, ir::Value*> Rebuilt(ops::GraphBuilder& b, const ir::Graph& old, ir::Graph& f,
                                                          absl::flat_hash_map<const ir::Value*, ir::Value*> map) {
  for (const auto& n : old.nodes()) {
    std::optional<OpId> id = ops::IdOf(*n);
    if (!id) {
      b.Fail(absl::UnimplementedError(absl::StrCat("op '", n->op(), "'")));
      return map;
    }
    std::vector<Expr> in;
    for (ir::Value* v : n->inputs()) in.push_back(b.Wrap(&f, map.at(v)));
    std::vector<Expr> outs = b.OpN(*id, in, n->attrs(), ops::Loc::Current(), &f);
    if (!b.ok() || outs.size() != n->outputs().size()) return map;
    for (size_t i = 0; i < outs.size(); ++i) map[n->output(i)] = outs[i].value();
  }
  return map;
}

// RowsOf is the rows of cat state `x` ([R, ...]) where `keep` ([R]) holds:
// a masked select of a column, a gather of whole rows otherwise (a
// multiclass score row [R, C] stays one row).
Expr RowsOf(Expr x, Expr keep) {
  if (x.rank() == 1) return x.builder()->Op(OpId::kMaskedSelect, {x, keep});
  std::vector<int64_t> tail;
  for (int64_t d = 1; d < x.rank(); ++d) tail.push_back(x.type().shape[d].size);
  const int64_t per_row = FixedProduct(x.type().shape, 1);
  Expr rows = ops::Flatten(x.builder()->Op(OpId::kNonzero, {keep}));
  for (size_t d = 0; d < tail.size(); ++d) rows = ops::Unsqueeze(rows, 1);
  Expr within = ops::Arange(x, per_row);
  if (tail.size() > 1) within = ops::Reshape(within, tail);
  return ops::Take(ops::Flatten(x), rows * static_cast<double>(per_row) + within);
}

absl::Status Replicator::Finalize(const absl::flat_hash_map<std::string, std::string>& companions) {
  ir::Module& mod = *m_.module;
  std::unique_ptr<ir::Graph> old = std::move(mod.finalize);
  // Composites (confmat_part) batch as their primitive ops. Not with cat
  // states: those run per replica on selected rows of another length than
  // the decomposition's types say.
  if (companions.empty()) {
    TALLY_RETURN_IF_ERROR(DecomposeComposites(*old, [](const ir::Node&) { return false; }));
  }
  auto fin = std::make_unique<ir::Graph>("finalize");
  ir::Graph& f = *fin;
  absl::flat_hash_map<std::string, Expr> params;
  for (const ir::StateDecl& d : mod.states) params[d.name] = b_.Wrap(&f, f.AddParam(d.name, d.type));
  auto replicated = [&](const ir::StateDecl* d) { return d != nullptr && d->check.empty(); };
  // The overall value's custom states: the groups folded in order through
  // their merge graph as built (sums just add up).
  absl::flat_hash_map<std::string, Expr> folded;
  if (spec_.overall) {
    for (const auto& [group, mg] : merges_) {
      absl::flat_hash_map<std::string, Expr> acc;
      for (ir::Value* p : mg->params()) {
        const std::string state = p->name().substr(2);
        if (!acc.contains(state)) acc[state] = ops::Select(params[state], 0, 0);
      }
      for (int64_t k = 1; k < spec_.replicas; ++k) {
        absl::flat_hash_map<const ir::Value*, ir::Value*> map;
        for (ir::Value* p : mg->params()) {
          const std::string state = p->name().substr(2);
          map[p] = (p->name()[0] == 'a' ? acc[state] : ops::Select(params[state], 0, k)).value();
        }
        auto cloned = mg->CloneInto(f, map);
        for (const auto& [label, v] : mg->returns()) acc[label] = b_.Wrap(&f, cloned.at(v));
      }
      for (auto& [state, x] : acc) folded[state] = x;
    }
  }
  // One copy of the old finalize per replica (k), or over all rows (nullopt).
  auto instance = [&](std::optional<int64_t> k) -> std::vector<std::pair<std::string, Expr>> {
    absl::flat_hash_map<const ir::Value*, ir::Value*> map;
    for (ir::Value* p : old->params()) {
      const ir::StateDecl* d = mod.FindState(p->name());
      Expr x = params[p->name()];
      if (replicated(d)) {
        if (auto c = companions.find(d->name); c != companions.end()) {
          if (k) x = RowsOf(x, params[c->second] == static_cast<double>(*k));
        } else if (auto fo = folded.find(d->name); !k && fo != folded.end()) {
          x = fo->second;
        } else {
          if (k) {
            x = ops::Select(x, 0, *k);
          } else if (d->reducer == ir::Reducer::kMax || d->reducer == ir::Reducer::kMin) {
            x = d->reducer == ir::Reducer::kMax ? ops::Max(x, {0}) : ops::Min(x, {0});
          } else {
            x = ops::Sum(x, {0});
          }
        }
      }
      map[p] = x.value();
    }
    if (!b_.ok()) return {};
    // Selected rows have another length than the declared rows: those
    // copies infer every type anew.
    auto cloned = companions.empty() || !k ? old->CloneInto(f, map) : Rebuilt(b_, *old, f, map);
    if (!b_.ok()) return {};
    std::vector<std::pair<std::string, Expr>> out;
    for (const auto& [label, v] : old->returns()) out.emplace_back(label, b_.Wrap(&f, cloned.at(v)));
    return out;
  };
  // [K, ...] per result label: one batched run of the old finalize when
  // every op batches (no cat states), else a copy per replica, stacked.
  std::vector<std::pair<std::string, Expr>> stacked;
  std::vector<std::vector<std::pair<std::string, Expr>>> per;
  if (companions.empty()) {
    ops::GraphBuilder tb(m_.name, b_.device());
    absl::flat_hash_map<const ir::Value*, std::pair<Expr, bool>> in;
    for (ir::Value* p : old->params()) {
      in[p] = {tb.Wrap(&f, params[p->name()].value()), replicated(mod.FindState(p->name()))};
    }
    Batched batched(tb, f, spec_.replicas);
    auto run = batched.Run(*old, in);
    // Any failure (an op it cannot batch) falls back to the copies.
    if (run.ok()) {
      for (const auto& [label, x] : *run) stacked.emplace_back(label, b_.Wrap(&f, x.value()));
    }
  }
  const auto& labels = old->returns();
  if (stacked.empty()) {
    for (int64_t k = 0; k < spec_.replicas; ++k) per.push_back(instance(k));
    if (!b_.ok()) return b_.status();
    bool stackable = true;
    for (const auto& [label, v] : per[0]) stackable &= FixedShape(v.type());
    for (size_t j = 0; stackable && j < labels.size(); ++j) {
      std::vector<Expr> xs;
      for (const auto& r : per) xs.push_back(r[j].second);
      stacked.emplace_back(labels[j].first, Stack(xs));
    }
  }
  if (spec_.kind == ReplicaSpec::Kind::kGroups) {
    const std::optional<int> under = spec_.overall ? std::optional<int>(0) : std::nullopt;
    if (!stacked.empty()) {
      for (const auto& [label, x] : stacked) f.AddReturn(under ? Under(label, *under) : label, x.value());
    } else {  // a list of per-group results, group by group
      for (int64_t k = 0; k < spec_.replicas; ++k) {
        for (size_t j = 0; j < labels.size(); ++j) {
          std::string l = Under(labels[j].first, static_cast<int>(k));
          f.AddReturn(under ? Under(l, *under) : l, per[k][j].second.value());
        }
      }
    }
    if (spec_.overall) {
      for (const auto& [label, v] : instance(std::nullopt)) f.AddReturn(Under(label, 1), v.value());
    }
  } else {
    if (stacked.size() != 1 || stacked[0].first != kResultLabel) {
      return Unsupported("its result is not one fixed-size tensor");
    }
    Expr raw = stacked[0].second;
    if (!ir::IsFloating(raw.dtype())) raw = ops::Cast(raw, ir::DType::kFloat32);
    const auto n = static_cast<double>(spec_.replicas);
    std::vector<Expr> outs;
    Expr mean = ops::Sum(raw, {0}) / n;
    if (spec_.mean) outs.push_back(mean);
    if (spec_.std) {
      Expr dev = raw - ops::Unsqueeze(mean, 0);
      outs.push_back(ops::Sqrt(ops::Sum(dev * dev, {0}) / (n - 1.0)));
    }
    if (!spec_.quantiles.empty()) {
      // torch.quantile: linear interpolation between the sorted values; NaN
      // when any value is NaN.
      Expr sorted = ops::SortValues(raw, 0);
      Expr any_nan = ops::Any(ops::IsNan(raw), {0});
      std::vector<Expr> qs;
      for (double q : spec_.quantiles) {
        const double pos = q * (n - 1.0);
        const auto lo = static_cast<int64_t>(std::floor(pos));
        const int64_t hi = std::min<int64_t>(lo + 1, spec_.replicas - 1);
        Expr a = ops::Select(sorted, 0, lo), b = ops::Select(sorted, 0, hi);
        Expr v = a + (b - a) * (pos - static_cast<double>(lo));
        qs.push_back(ops::Where(any_nan, ops::FullLike(v, std::numeric_limits<double>::quiet_NaN(), v.dtype()), v));
      }
      outs.push_back(spec_.quantile_list ? Stack(qs) : qs[0]);
    }
    if (spec_.raw) outs.push_back(raw);
    for (size_t i = 0; i < outs.size(); ++i) {
      f.AddReturn(PartLabel(kResultLabel, {static_cast<int>(i)}), outs[i].value());
    }
  }
  if (!b_.ok()) return b_.status();
  RemoveUnused(f);  // a failed batched attempt, unused copies
  mod.finalize = std::move(fin);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Metric> Replicate(Metric metric, const ReplicaSpec& spec, const Signature& sig,
                                 const ir::Device& device) {
  if (spec.replicas < 1) {
    return absl::InvalidArgumentError(absl::StrCat(metric.name, ": ", spec.arg_name, " must be >= 1"));
  }
  Replicator r(metric, spec, device);
  TALLY_RETURN_IF_ERROR(r.Run(sig));
  return metric;
}

}  // namespace tally::dsl
