// Registers Tally's fused kernels as LibTorch operators (namespace `tally`),
// with a CPU and a Meta implementation each, so they run through the
// dispatcher, in TorchScript graphs, and on `meta` tensors.
#include <torch/library.h>

#include "ops/fused/bl_confmat.h"
#include "ops/fused/count_outside.h"
#include "ops/fused/mc_confmat.h"
#include "ops/fused/rank_stats.h"
#include "ops/fused/reg_stats.h"
#include "ops/fused/retrieval.h"
#include "ops/fused/score_code.h"

TORCH_LIBRARY(tally, m) {
  m.def(
      "mc_confmat(Tensor preds, Tensor target, int num_classes, int? ignore_index, Tensor? weight=None, "
      "Tensor? groups=None, int num_groups=0) -> (Tensor, Tensor, Tensor)");
  m.def(
      "mc_marginals(Tensor preds, Tensor target, int num_classes, int? ignore_index, str parts, "
      "bool totals=False, Tensor? weight=None, Tensor? groups=None, int num_groups=0) -> (Tensor, Tensor, Tensor)");
  m.def(
      "bl_confmat(Tensor preds, Tensor target, float threshold, bool logits_over_kept, int? ignore_index) -> "
      "(Tensor, Tensor, Tensor)");
}

TORCH_LIBRARY_IMPL(tally, CPU, m) {
  m.impl("mc_confmat", &tally::ops::fused::McConfmatCpu);
  m.impl("mc_marginals", &tally::ops::fused::McMarginalsCpu);
  m.impl("bl_confmat", &tally::ops::fused::BlConfmatCpu);
}

TORCH_LIBRARY_IMPL(tally, Meta, m) {
  m.impl("mc_confmat", &tally::ops::fused::McConfmatMeta);
  m.impl("mc_marginals", &tally::ops::fused::McMarginalsMeta);
  m.impl("bl_confmat", &tally::ops::fused::BlConfmatMeta);
}

// reg_stats -> (n, then the statistics; ops/fused/reg_stats.h).
TORCH_LIBRARY_FRAGMENT(tally, m) {
  m.def("reg_stats(Tensor preds, Tensor target, bool error_moments=True) -> Tensor[]");
}
TORCH_LIBRARY_IMPL(tally, CPU, m) { m.impl("reg_stats", &tally::ops::fused::RegStatsCpu); }
TORCH_LIBRARY_IMPL(tally, Meta, m) { m.impl("reg_stats", &tally::ops::fused::RegStatsMeta); }

// moments_merge -> the merged state (ops/fused/reg_stats.h).
TORCH_LIBRARY_FRAGMENT(tally, m) { m.def("moments_merge(Tensor[] states, int variables, int[] pairs) -> Tensor[]"); }
TORCH_LIBRARY_IMPL(tally, CPU, m) { m.impl("moments_merge", &tally::ops::fused::MomentsMergeCpu); }
TORCH_LIBRARY_IMPL(tally, Meta, m) { m.impl("moments_merge", &tally::ops::fused::MomentsMergeMeta); }

// The retrieval metrics' update check and per-query scores (ops/fused/retrieval.h).
TORCH_LIBRARY_FRAGMENT(tally, m) {
  m.def("count_invalid(Tensor target, int? ignore_index) -> (Tensor, Tensor)");
  m.def(
      "retrieval_score(Tensor keys, Tensor preds, Tensor target, str metric, str empty_target_action, "
      "bool adaptive_k, int? top_k, int? ignore_index, str aggregation=\"mean\", Tensor? weight=None) -> "
      "(Tensor, Tensor)");
}
TORCH_LIBRARY_IMPL(tally, CPU, m) {
  m.impl("count_invalid", &tally::ops::fused::CountInvalidCpu);
  m.impl("retrieval_score", &tally::ops::fused::RetrievalScoreCpu);
}
TORCH_LIBRARY_IMPL(tally, Meta, m) {
  m.impl("count_invalid", &tally::ops::fused::CountInvalidMeta);
  m.impl("retrieval_score", &tally::ops::fused::RetrievalScoreMeta);
}

// The exact binary AUROC / average precision statistics (ops/fused/rank_stats.h).
TORCH_LIBRARY_FRAGMENT(tally, m) {
  m.def("binary_rank_stats(Tensor scores, Tensor positive) -> (Tensor, Tensor, Tensor, Tensor)");
}
TORCH_LIBRARY_IMPL(tally, CPU, m) { m.impl("binary_rank_stats", &tally::ops::fused::BinaryRankStatsCpu); }
TORCH_LIBRARY_IMPL(tally, Meta, m) { m.impl("binary_rank_stats", &tally::ops::fused::BinaryRankStatsMeta); }

// The exact16 curves' score codes (ops/fused/score_code.h).
TORCH_LIBRARY_FRAGMENT(tally, m) {
  m.def("score_code16(Tensor x, str format) -> Tensor");
  m.def("code16_counts(Tensor probs, Tensor label, str format, int classes) -> Tensor");
}
TORCH_LIBRARY_IMPL(tally, CPU, m) {
  m.impl("score_code16", &tally::ops::fused::ScoreCode16Cpu);
  m.impl("code16_counts", &tally::ops::fused::Code16CountsCpu);
}
TORCH_LIBRARY_IMPL(tally, Meta, m) {
  m.impl("score_code16", &tally::ops::fused::ScoreCode16Meta);
  m.impl("code16_counts", &tally::ops::fused::Code16CountsMeta);
}

// Range checks in one read (ops/fused/count_outside.h).
TORCH_LIBRARY_FRAGMENT(tally, m) { m.def("count_outside(Tensor x, float low, float high) -> Tensor"); }
TORCH_LIBRARY_IMPL(tally, CPU, m) { m.impl("count_outside", &tally::ops::fused::CountOutsideCpu); }
TORCH_LIBRARY_IMPL(tally, Meta, m) { m.impl("count_outside", &tally::ops::fused::CountOutsideMeta); }
