#include "engine/serving/internal/metric_set.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/persist/checkpoint_format.h"
#include "engine/runtime/compiler.h"
#include "engine/runtime/results.h"
#include "engine/serving/internal/session_shards.h"
#include "support/status_macros.h"

namespace tally::serving::internal {

absl::Status MetricSet::CheckValues(const NamedTensors& inputs) const {
  std::unique_ptr<Program> probe;
  {
    std::lock_guard<std::mutex> lock(probes_mu);
    if (!probes.empty()) {
      probe = std::move(probes.back());
      probes.pop_back();
    }
  }
  if (!probe) {
    ProgramOptions po = proto->options();
    po.backend = exec::Backend::kEager;
    TALLY_ASSIGN_OR_RETURN(probe, Program::Create(proto->module().Clone(), po));
  }
  absl::Status st = probe->Update(inputs);
  if (st.ok()) st = probe->CheckValues();
  // Back to the pool only when clean (a failed reset drops it).
  if (probe->Reset().ok()) {
    std::lock_guard<std::mutex> lock(probes_mu);
    probes.push_back(std::move(probe));
  }
  return st;
}

MetricSet::~MetricSet() {
  for (Shard* s = shards.load(); s != nullptr;) {
    Shard* next = s->next;
    delete s;
    s = next;
  }
}

absl::StatusOr<std::unique_ptr<MetricSet>> MakeMetricSet(BuiltMetricSet spec, const SessionOptions& options,
                                                         std::vector<Window>* windows) {
  if (spec.entries.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("session: metric set '", spec.name, "' has no metric"));
  }
  auto set = std::make_unique<MetricSet>();
  set->name = spec.name;
  if (spec.specs.size() != spec.entries.size()) {
    return absl::InvalidArgumentError(absl::StrCat("session: metric set '", spec.name, "' has ", spec.specs.size(),
                                                   " specs for ", spec.entries.size(), " metrics"));
  }
  set->specs = std::move(spec.specs);
  const std::vector<dsl::CollectionEntry>& entries = spec.entries;
  for (const auto& e : entries) {
    set->labels.push_back(e.label);
    set->keys.push_back(e.metric.result_keys);
  }
  CompileOptions co;
  co.device = options.device;
  co.backend = options.backend;
  co.max_state_bytes = options.max_state_bytes;
  TALLY_ASSIGN_OR_RETURN(set->proto, Compile(entries, co));
  // The budget bounds the rows of every program of the set together (its
  // shards', total's, windows' and probes'), whoever read them in between.
  set->proto->ShareRowLedger(std::make_shared<RowLedger>());
  set->batchable = true;
  const auto& params = set->proto->module().update->params();
  for (const auto* p : params) {
    set->params.push_back(p->name());
    const ir::TensorType& t = p->type();
    set->batchable = set->batchable && t.rank() > 0 && t.shape[0].is_symbolic() &&
                     t.shape[0].symbol == params[0]->type().shape[0].symbol;
  }
  set->fingerprint_hash = persist::HexHash(set->proto->fingerprint());
  TALLY_ASSIGN_OR_RETURN(set->total, set->NewProgram());
  set->windows = windows;
  set->rings.resize(windows->size());
  for (size_t w = 0; w < windows->size(); ++w) set->rings[w].resize((*windows)[w].spec.buckets);
  return set;
}

absl::Status RouteInputs(const std::vector<MetricSet*>& sets, const NamedTensors& inputs, bool check_values,
                         bool name_sets, RoutedInputs& routed) {
  absl::Status status;
  routed.filtered.assign(sets.size(), NamedTensors());
  routed.whole.assign(sets.size(), true);
  for (const auto& [name, t] : inputs) {
    bool taken = false;
    for (const MetricSet* s : sets) taken |= std::find(s->params.begin(), s->params.end(), name) != s->params.end();
    if (!taken && status.ok()) {
      std::vector<std::string> sn, taken;
      for (const MetricSet* s : sets) {
        sn.push_back(s->name);
        for (const std::string& p : s->params)
          if (std::find(taken.begin(), taken.end(), p) == taken.end()) taken.push_back(p);
      }
      status = absl::InvalidArgumentError(absl::StrCat("session: unexpected input '", name, "' (no metric of set ",
                                                       absl::StrJoin(sn, ", "), " takes it; they take ",
                                                       absl::StrJoin(taken, ", "), ")"));
    }
  }
  for (size_t i = 0; i < sets.size() && status.ok(); ++i) {
    const MetricSet& s = *sets[i];
    auto takes = [&](const std::string& name) {
      return std::find(s.params.begin(), s.params.end(), name) != s.params.end();
    };
    for (const auto& in : inputs) routed.whole[i] = routed.whole[i] && takes(in.first);
    if (!routed.whole[i]) {
      for (const auto& in : inputs)
        if (takes(in.first)) routed.filtered[i].push_back(in);
    }
    const NamedTensors& mine = routed.whole[i] ? inputs : routed.filtered[i];
    status = s.proto->Validate(mine);
    if (status.ok() && check_values) status = s.CheckValues(mine);
    if (!status.ok() && name_sets) {
      status = absl::Status(status.code(), absl::StrCat("metric set '", s.name, "': ", status.message()));
    }
  }
  return status;
}

int64_t RowsOf(const NamedTensors& inputs) {
  for (const auto& [name, t] : inputs)
    if (t.defined() && t.dim() > 0) return t.size(0);
  return 0;
}

absl::StatusOr<std::vector<MetricValue>> Collect(const Program& p, const MetricSet& set) {
  TALLY_ASSIGN_OR_RETURN(NamedTensors values, p.Compute());
  std::vector<MetricValue> out;
  for (size_t i = 0; i < set.labels.size(); ++i) {
    TALLY_ASSIGN_OR_RETURN(ResultTree tree, CollectMetricResult(values, set.labels[i], set.keys[i]));
    out.push_back({set.specs[i], set.labels[i], std::move(tree)});
  }
  return out;
}

}  // namespace tally::serving::internal
