#include "engine/serving/internal/session_shards.h"

#include <thread>

#include "absl/container/flat_hash_map.h"
#include "engine/serving/internal/metric_set.h"
#include "support/status_macros.h"

namespace tally::serving::internal {
namespace {

// kBusy marks a slot whose state an update holds.
ShardState g_busy_marker;
ShardState* const kBusy = &g_busy_marker;

// Per thread, per session id, the shard of every set.
thread_local absl::flat_hash_map<uint64_t, std::vector<Shard*>> t_shards;

// TakeForRead replaces the published state by the shard's spare and makes
// the taken state the next spare.
ShardState& TakeForRead(Shard& sh) {
  ShardState* spare = sh.spare.release();
  ShardState* cur = sh.slot.load(std::memory_order_acquire);
  for (;;) {
    if (cur == kBusy) {
      std::this_thread::yield();
      cur = sh.slot.load(std::memory_order_acquire);
      continue;
    }
    if (sh.slot.compare_exchange_weak(cur, spare, std::memory_order_acq_rel, std::memory_order_acquire)) break;
  }
  sh.spare.reset(cur);
  return *cur;
}

}  // namespace

std::vector<Shard*>& ThreadShardsOf(uint64_t id, const std::vector<std::unique_ptr<MetricSet>>& sets) {
  std::vector<Shard*>& mine = t_shards[id];
  if (mine.empty()) {
    for (const auto& set : sets) {
      auto* sh = new Shard();
      sh->slot.store(new ShardState(), std::memory_order_relaxed);
      sh->spare = std::make_unique<ShardState>();
      sh->next = set->shards.load(std::memory_order_relaxed);
      while (!set->shards.compare_exchange_weak(sh->next, sh, std::memory_order_release, std::memory_order_relaxed)) {
      }
      mine.push_back(sh);
    }
  }
  return mine;
}

ShardState* Hold(Shard& sh) { return sh.slot.exchange(kBusy, std::memory_order_acquire); }

void Publish(Shard& sh, ShardState* st) { sh.slot.store(st, std::memory_order_release); }

absl::Status ApplyNow(MetricSet& set, ShardState& st, const NamedTensors& inputs, const Epochs& epochs,
                      bool* all_applied) {
  if (all_applied != nullptr) *all_applied = false;
  if (!st.all) {
    TALLY_ASSIGN_OR_RETURN(st.all, set.NewProgram());
  }
  TALLY_RETURN_IF_ERROR(st.all->Update(inputs));
  if (all_applied != nullptr) *all_applied = true;
  st.all_dirty = true;
  return UpdateRings(set, st.rings, inputs, epochs);
}

absl::Status HarvestShards(MetricSet& set) {
  absl::Status result;
  // acc is a taken shard's all-time program (now a spare's, so only reads
  // touch it) that the other shards' deltas fold into.
  Program* acc = nullptr;
  for (Shard* sh = set.shards.load(std::memory_order_acquire); sh != nullptr; sh = sh->next) {
    ShardState& st = TakeForRead(*sh);
    absl::Status f = Flush(set, st);
    if (!f.ok() && result.ok()) result = f;
    set.counters.updates += st.updates;
    set.counters.rows += st.rows;
    set.counters.rejected += st.rejected;
    st.updates = st.rows = st.rejected = 0;
    if (st.all && st.all_dirty) {
      // The shards' deltas are folded together first and into the total
      // once: a cat state's accumulated rows are copied once per read, not
      // once per shard.
      if (acc == nullptr) {
        acc = st.all.get();
      } else {
        absl::Status m = acc->Merge(*st.all);
        if (m.ok()) m = st.all->Reset();
        if (!m.ok() && result.ok()) result = m;
      }
      st.all_dirty = false;
    }
    for (size_t w = 0; w < st.rings.size(); ++w) {
      for (Bucket& b : st.rings[w]) {
        absl::Status m = FoldBucket(set, set.rings[w], b);
        if (!m.ok() && result.ok()) result = m;
      }
    }
  }
  if (acc != nullptr) {
    absl::Status m = set.total->Merge(*acc);
    if (m.ok()) m = acc->Reset();
    if (!m.ok() && result.ok()) result = m;
  }
  return result;
}

}  // namespace tally::serving::internal
