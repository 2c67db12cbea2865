#include "engine/serving/internal/window_ring.h"

#include <algorithm>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "engine/serving/internal/metric_set.h"
#include "support/status_macros.h"

namespace tally::serving::internal {
namespace {

absl::Status ResetBucket(const MetricSet& set, Bucket& b) {
  if (!b.program) {
    TALLY_ASSIGN_OR_RETURN(b.program, set.NewProgram());
  } else if (b.dirty) {
    TALLY_RETURN_IF_ERROR(b.program->Reset());
  }
  b.dirty = false;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<Window>> MakeWindows(const std::vector<WindowSpec>& specs) {
  std::vector<Window> windows;
  absl::flat_hash_set<std::string> names;
  for (const WindowSpec& w : specs) {
    const std::string what = absl::StrCat("session: window '", w.name, "'");
    if (w.name.empty() || !names.insert(w.name).second) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": names must be unique and non-empty"));
    }
    if (w.size <= 0 || w.buckets <= 0 || w.buckets > 4096) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": size must be positive and buckets in [1, 4096]"));
    }
    Window win{w, 1};
    if (w.kind == WindowSpec::Kind::kUpdates) {
      if (w.size % w.buckets != 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(what, ": buckets (", w.buckets, ") must divide size (", w.size, ")"));
      }
      win.interval = w.size / w.buckets;
    } else {
      win.interval = std::max<int64_t>(w.size * 1000000000 / w.buckets, 1);
    }
    windows.push_back(win);
  }
  return windows;
}

Epochs EpochsOf(MetricSet& set, int64_t now_ns) {
  Epochs out;
  int64_t seq = -1;
  for (const Window& win : *set.windows) {
    if (win.spec.kind == WindowSpec::Kind::kUpdates) {
      if (seq < 0) seq = set.update_seq.fetch_add(1, std::memory_order_relaxed);
      out.push_back(seq / win.interval);
    } else {
      out.push_back(now_ns / win.interval);
    }
  }
  return out;
}

absl::Status UpdateRings(const MetricSet& set, std::vector<Ring>& rings, const NamedTensors& inputs,
                         const Epochs& epochs) {
  const std::vector<Window>& windows = *set.windows;
  if (windows.empty()) return absl::OkStatus();
  if (rings.size() != windows.size()) rings.resize(windows.size());
  for (size_t w = 0; w < windows.size(); ++w) {
    const Window& win = windows[w];
    const int64_t epoch = epochs[w];
    Ring& ring = rings[w];
    if (ring.size() != static_cast<size_t>(win.spec.buckets)) ring.resize(win.spec.buckets);
    Bucket& b = ring[epoch % win.spec.buckets];
    // A bucket of an older epoch with the same slot is outside the window.
    if (b.epoch != epoch || !b.program) {
      TALLY_RETURN_IF_ERROR(ResetBucket(set, b));
      b.epoch = epoch;
    }
    TALLY_RETURN_IF_ERROR(b.program->Update(inputs));
    b.dirty = true;
  }
  return absl::OkStatus();
}

absl::Status FoldBucket(const MetricSet& set, Ring& ring, Bucket& b) {
  if (!b.dirty || b.epoch < 0) return absl::OkStatus();
  Bucket& target = ring[b.epoch % ring.size()];
  if (target.epoch < b.epoch || !target.program) {
    TALLY_RETURN_IF_ERROR(ResetBucket(set, target));
    target.epoch = b.epoch;
  }
  if (target.epoch == b.epoch) {
    TALLY_RETURN_IF_ERROR(target.program->Merge(*b.program));
    target.dirty = true;
  }
  TALLY_RETURN_IF_ERROR(b.program->Reset());
  b.dirty = false;
  b.epoch = -1;
  return absl::OkStatus();
}

absl::Status MergeWindow(const MetricSet& set, size_t w, const std::function<int64_t()>& now_ns, Program& view) {
  const Window& win = (*set.windows)[w];
  int64_t cur = -1;
  if (win.spec.kind == WindowSpec::Kind::kUpdates) {
    const int64_t seq = set.update_seq.load(std::memory_order_relaxed);
    if (seq > 0) cur = (seq - 1) / win.interval;
  } else {
    cur = now_ns() / win.interval;
  }
  for (const Bucket& b : set.rings[w]) cur = std::max(cur, b.epoch);
  for (const Bucket& b : set.rings[w]) {
    if (b.epoch < 0 || b.epoch <= cur - win.spec.buckets || !b.dirty) continue;
    TALLY_RETURN_IF_ERROR(view.Merge(*b.program));
  }
  return absl::OkStatus();
}

absl::Status ResetRing(Ring& ring) {
  for (Bucket& b : ring) {
    if (b.program && b.dirty) TALLY_RETURN_IF_ERROR(b.program->Reset());
    b.dirty = false;
    b.epoch = -1;
  }
  return absl::OkStatus();
}

void DropRing(Ring& ring) {
  for (Bucket& b : ring) {
    if (b.program && b.dirty) (void)b.program->Reset();
    b.dirty = false;
    b.epoch = -1;
  }
}

}  // namespace tally::serving::internal
