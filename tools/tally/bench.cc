#include "tools/tally/bench.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "api/tally.h"
#include "engine/dist/gloo_group.h"
#include "engine/dist/launch.h"
#include "engine/dist/sync.h"
#include "engine/ir/aten_types.h"
#include "engine/runtime/compiler.h"
#include "engine/runtime/result_text.h"
#include "support/status_macros.h"

namespace tally::tools {
namespace {

using Clock = std::chrono::steady_clock;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double SecondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// LastLevelCacheBytes is the largest CPU cache (32 MiB if unknown): inputs
// larger than twice it come from DRAM, whatever the replacement policy.
int64_t LastLevelCacheBytes() {
  for (int name : {_SC_LEVEL3_CACHE_SIZE, _SC_LEVEL2_CACHE_SIZE}) {
    const long bytes = sysconf(name);
    if (bytes > 0) return bytes;
  }
  return int64_t{32} << 20;
}

// ReadProbe is the machine's read bandwidth: a plain sum over a float32
// tensor of `bytes` (at least 4x the last-level cache), the median of
// `runs` passes and their spread.
struct ReadProbe {
  double bytes = 0, gb_per_s = 0, spread = 0;  // spread: (max - min) / median
  int runs = 0;
};
// WaitFor returns once the work queued on `device` so far is done: a host
// read of a value made after it on the same stream (on cpu, a no-op read).
// Timers read after it count the device's work, not just its launches.
void WaitFor(c10::Device device) { (void)at::zeros({1}, at::TensorOptions().device(device)).item<float>(); }

ReadProbe ReadBandwidth(bool quick, c10::Device device) {
  const int64_t bytes = std::max<int64_t>(quick ? int64_t{64} << 20 : 400'000'000, 4 * LastLevelCacheBytes());
  at::Tensor t = at::ones({bytes / 4}, at::TensorOptions().dtype(at::kFloat).device(device));
  (void)t.sum().item<float>();
  ReadProbe p;
  p.runs = quick ? 3 : 9;
  p.bytes = static_cast<double>(t.nbytes());
  std::vector<double> rates;
  for (int i = 0; i < p.runs; ++i) {
    auto t0 = Clock::now();
    (void)t.sum().item<float>();
    rates.push_back(p.bytes / SecondsSince(t0) / 1e9);
  }
  p.gb_per_s = Median(rates);
  p.spread =
      (*std::max_element(rates.begin(), rates.end()) - *std::min_element(rates.begin(), rates.end())) / p.gb_per_s;
  return p;
}

struct Workload {
  std::vector<std::string> specs;
  NamedTensors batch;                 // one update's inputs
  std::vector<NamedTensors> batches;  // when set: update i takes batches[i % size] (batch unused)
  // Bandwidth workloads (gb_per_s): `batches` are distinct and together
  // over twice the last-level cache, so every update reads its rows from
  // DRAM, as a server's fresh inputs come.
  bool streams = false;
  bool time_compute = false;  // report ms_compute (and us_per_update_cold)
  int64_t updates = 0;        // updates per timed run
  int runs = 0;
  double input_bytes = 0;
};

NamedTensors ClassificationBatch(int64_t n, int64_t c, uint64_t seed = 7) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  at::Tensor target = at::randint(0, c, {n}, gen, at::kLong);
  at::Tensor logits = at::randn({n, c}, gen, at::kFloat);
  return {{"preds", logits}, {"target", target}};
}

// Weighted appends `weight`: one float per row in [0, 2).
NamedTensors Weighted(NamedTensors batch, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed + 1000);
  const int64_t n = batch.front().second.size(0);
  batch.emplace_back("weight", at::rand({n}, gen, at::kFloat) * 2.0);
  return batch;
}

// Grouped appends `groups`: one int64 group id per row in [0, 64).
constexpr int64_t kBenchGroups = 64;
NamedTensors Grouped(NamedTensors batch, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed + 2000);
  const int64_t n = batch.front().second.size(0);
  batch.emplace_back("groups", at::randint(0, kBenchGroups, {n}, gen, at::kLong));
  return batch;
}

NamedTensors RegressionBatch(int64_t n, uint64_t seed = 7) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  at::Tensor target = at::randn({n}, gen, at::kFloat) + 1e4;
  at::Tensor preds = target + at::randn({n}, gen, at::kFloat) * 0.1;
  return {{"preds", preds}, {"target", target}};
}

// PeakRssMb is this process's peak resident memory: VmHWM, which belongs to
// the process's own address space (getrusage's ru_maxrss also carries the
// peak of a large parent that forked it), else ru_maxrss.
double PeakRssMb() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::strtod(line.c_str() + 6, nullptr) / 1024.0;  // in kB
  }
  struct rusage u;
  if (getrusage(RUSAGE_SELF, &u) != 0) return 0;
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

// LabelBatch is `n` integer predictions and targets over `c` classes, about
// 70% of them right (a trained model's confusion matrix).
NamedTensors LabelBatch(int64_t n, int64_t c) {
  at::Generator gen = at::detail::createCPUGenerator(7);
  at::Tensor target = at::randint(0, c, {n}, gen, at::kLong);
  at::Tensor wrong = at::randint(0, c, {n}, gen, at::kLong);
  at::Tensor preds = at::where(at::rand({n}, gen, at::kFloat) < 0.7, target, wrong);
  return {{"preds", preds}, {"target", target}};
}

// ClsCollection is docs/cli.md's five-metric cls collection over `c` classes.
std::vector<std::string> ClsCollection(int64_t c) {
  std::vector<std::string> out;
  for (const char* m :
       {"multiclass_accuracy(num_classes=%d)", "multiclass_precision(num_classes=%d, average=macro)",
        "multiclass_recall(num_classes=%d, average=macro)", "multiclass_f1_score(num_classes=%d, average=macro)",
        "multiclass_confusion_matrix(num_classes=%d)"}) {
    std::string spec = m;
    spec.replace(spec.find("%d"), 2, std::to_string(c));
    out.push_back(spec);
  }
  return out;
}

const std::vector<std::string> kClsCollection = {
    "multiclass_accuracy(num_classes=10)", "multiclass_precision(num_classes=10, average=macro)",
    "multiclass_recall(num_classes=10, average=macro)", "multiclass_f1_score(num_classes=10, average=macro)",
    "multiclass_confusion_matrix(num_classes=10)"};

absl::StatusOr<Workload> MakeWorkload(const std::string& name, bool quick) {
  Workload w;
  if (name == "acc_small") {
    w.specs = {"multiclass_accuracy(num_classes=10)"};
    w.batch = ClassificationBatch(32, 10);
    w.updates = quick ? 200 : 20000;
    w.runs = quick ? 2 : 5;
  } else if (name == "cls_small") {
    w.specs = kClsCollection;
    w.batch = ClassificationBatch(32, 10);
    w.updates = quick ? 200 : 20000;
    w.runs = quick ? 2 : 5;
  } else if (name == "cls_large") {
    w.specs = kClsCollection;
    w.batch = ClassificationBatch(quick ? 10000 : 1000000, 10);
    w.updates = quick ? 2 : 10;
    w.runs = quick ? 2 : 5;
    w.streams = true;
  } else if (name == "cls_weighted") {
    // cls_large with a weight per row (sklearn's sample_weight).
    w.specs = kClsCollection;
    w.batch = Weighted(ClassificationBatch(quick ? 10000 : 1000000, 10), 7);
    w.updates = quick ? 2 : 10;
    w.runs = quick ? 2 : 5;
    w.streams = true;
  } else if (name == "cls_sliced") {
    // cls_large per group: every spec with num_groups=64 and a group id per row.
    for (const std::string& spec : kClsCollection) {
      w.specs.push_back(absl::StrCat(spec.substr(0, spec.size() - 1), ", num_groups=", kBenchGroups, ")"));
    }
    w.batch = Grouped(ClassificationBatch(quick ? 10000 : 1000000, 10), 7);
    w.updates = quick ? 2 : 10;
    w.runs = quick ? 2 : 5;
    w.streams = true;
  } else if (name == "auroc_bootstrap" || name == "auroc_bootstrap_exact16") {
    // Bootstrap intervals (B = 100) of binary AUROC, binned (200
    // thresholds) or exact16, over 1,000,000 rows in 10 updates.
    w.specs = {absl::StrCat("binary_auroc(thresholds=", name == "auroc_bootstrap" ? "200" : "exact16",
                            ", num_bootstraps=100, seed=7, quantile=[0.025, 0.975])")};
    const int64_t updates = quick ? 2 : 10, rows = quick ? 10000 : 100000;
    at::Generator gen = at::detail::createCPUGenerator(7);
    for (int64_t u = 0; u < updates; ++u) {
      at::Tensor target = (at::rand({rows}, gen, at::kFloat) < 0.3).to(at::kLong);
      at::Tensor preds = at::rand({rows}, gen, at::kFloat) * 0.7 + target.to(at::kFloat) * 0.3;
      w.batches.push_back({{"preds", preds}, {"target", target}});
    }
    w.batch = w.batches[0];
    w.updates = updates;
    w.runs = quick ? 1 : 3;
    w.time_compute = true;
  } else if (name == "cls_vocab") {
    // An LLM vocabulary: accuracy, precision, recall, f1 (macro) and
    // accuracy (micro) over C = 131,072 logits, 512 rows (268 MB) an update.
    const int64_t c = 131072;
    for (const char* m : {"multiclass_accuracy", "multiclass_precision", "multiclass_recall", "multiclass_f1_score"}) {
      w.specs.push_back(absl::StrCat(m, "(num_classes=", c, ", average=macro)"));
    }
    w.specs.push_back(absl::StrCat("multiclass_accuracy(num_classes=", c, ", average=micro)"));
    w.batch = ClassificationBatch(quick ? 16 : 512, c);
    w.updates = quick ? 2 : 10;
    w.runs = quick ? 2 : 5;
    w.streams = true;
  } else if (name == "cls_imagenet21k") {
    // ImageNet-21k: the cls collection (confusion matrix included) over
    // C = 21,841 classes, integer labels, batches of 4,096.
    w.specs = ClsCollection(21841);
    w.batch = LabelBatch(4096, 21841);
    w.updates = quick ? 1 : 5;
    w.runs = quick ? 1 : 3;
  } else if (name == "clustering_1k") {
    // A clustering collection (ARI, NMI, V-measure, Fowlkes-Mallows) over
    // 1,000 clusters and classes: one shared 1,000 x 1,000 table, batches of
    // 1,000,000 cluster ids.
    for (const char* m :
         {"adjusted_rand_score", "normalized_mutual_info_score", "v_measure_score", "fowlkes_mallows_index"}) {
      w.specs.push_back(absl::StrCat(m, "(num_classes=1000)"));
    }
    w.batch = LabelBatch(quick ? 10000 : 1000000, 1000);
    w.updates = quick ? 2 : 10;
    w.runs = quick ? 1 : 3;
    w.time_compute = true;
  } else if (name == "wer_10k" || name == "bleu_10k" || name == "rouge_10k") {
    // Word error rate, BLEU or ROUGE-1/2/L, over 10,000 transcripts (10 updates of
    // 1,000): each reference 20-40 word ids of a 10,000-word vocabulary (a
    // 40-wide row, -1 padding), its hypothesis with about one word in ten
    // substituted, one in twenty dropped and one in twenty followed by an
    // inserted word.
    w.specs = {name == "wer_10k"    ? "word_error_rate"
               : name == "bleu_10k" ? "bleu_score"
                                    : "rouge_score(rouge_keys=('rouge1', 'rouge2', 'rougeL'))"};
    const int64_t updates = quick ? 2 : 10, rows = quick ? 100 : 1000;
    at::Generator gen = at::detail::createCPUGenerator(7);
    for (int64_t u = 0; u < updates; ++u) {
      at::Tensor target = at::randint(0, 10000, {rows, 40}, gen, at::kLong);
      at::Tensor len = at::randint(20, 41, {rows, 1}, gen, at::kLong);
      target = at::where(at::arange(40, at::kLong).unsqueeze(0) < len, target, -1);
      at::Tensor noise = at::rand({rows, 40}, gen, at::kFloat);
      at::Tensor preds = at::where(noise < 0.1, at::randint(0, 10000, {rows, 40}, gen, at::kLong), target);
      preds = at::where(noise > 0.95, -1, preds);
      at::Tensor inserted = at::where((noise > 0.1) & (noise < 0.15) & (target >= 0),
                                      at::randint(0, 10000, {rows, 40}, gen, at::kLong), -1);
      // Each word followed by its insertion (or padding): [rows, 80].
      preds = at::stack({preds, inserted}, 2).reshape({rows, 80});
      w.batches.push_back({{"preds", preds}, {"target", target}});
    }
    w.batch = w.batches[0];
    w.updates = updates;
    w.runs = quick ? 1 : 3;
    w.time_compute = true;
  } else if (name == "perplexity_llm") {
    // Perplexity over a language model's bfloat16 logits [8, 2048, 131072]
    // (4 GiB: eight 2,048-token sequences over a 131,072-word vocabulary),
    // one target in ten ignored (-100); quick: [2, 64, 131072]. The logits
    // are drawn 256 positions at a time, so that drawing them needs no
    // float32 copy of the whole.
    w.specs = {"perplexity(ignore_index=-100)"};
    const int64_t b = quick ? 2 : 8, s = quick ? 64 : 2048, v = 131072;
    at::Generator gen = at::detail::createCPUGenerator(7);
    at::Tensor logits = at::empty({b * s, v}, at::kBFloat16);
    for (int64_t row = 0; row < b * s; row += 256) {
      const int64_t n = std::min<int64_t>(256, b * s - row);
      logits.narrow(0, row, n).copy_(at::randn({n, v}, gen, at::kFloat) * 2.0);
    }
    at::Tensor target = at::randint(0, v, {b, s}, gen, at::kLong);
    target = at::where(at::rand({b, s}, gen, at::kFloat) < 0.1, -100, target);
    w.batch = {{"preds", logits.view({b, s, v})}, {"target", target}};
    w.batches = {w.batch};  // one batch, far past the last-level cache: read from DRAM
    w.streams = true;
    w.updates = quick ? 2 : 3;
    w.runs = quick ? 1 : 2;
  } else if (name == "si_sdr_batch") {
    // SI-SDR of 64 four-second utterances at 16 kHz (float32 [64, 64000]),
    // each estimate the reference plus noise at about 10 dB, 10 updates.
    w.specs = {"scale_invariant_signal_distortion_ratio"};
    const int64_t rows = quick ? 8 : 64, samples = quick ? 16000 : 64000;
    at::Generator gen = at::detail::createCPUGenerator(7);
    at::Tensor target = at::randn({rows, samples}, gen, at::kFloat);
    at::Tensor preds = target + at::randn({rows, samples}, gen, at::kFloat) * 0.3;
    w.batch = {{"preds", preds}, {"target", target}};
    w.updates = quick ? 2 : 10;
    w.runs = quick ? 1 : 3;
    w.time_compute = true;
  } else if (name == "miou_cityscapes") {
    // Mean IoU over Cityscapes-sized index masks: 19 classes, 4 int64
    // masks [1024, 2048] an update (128 MB of preds and target, past the
    // last-level cache), each a class per 16 x 16 block with one pixel in
    // ten of target changed; quick: [64, 128].
    w.specs = {"mean_iou(num_classes=19, input_format=index)"};
    const int64_t b = 4, h = quick ? 64 : 1024, wd = quick ? 128 : 2048;
    at::Generator gen = at::detail::createCPUGenerator(7);
    at::Tensor blocks = at::randint(0, 19, {b, h / 16, wd / 16}, gen, at::kLong);
    at::Tensor preds = blocks.repeat_interleave(16, 1).repeat_interleave(16, 2).contiguous();
    // One statement a draw: the generator's order is the peer's (scripts/peer_bench.py).
    at::Tensor changed = at::rand({b, h, wd}, gen, at::kFloat) < 0.1;
    at::Tensor other = at::randint(0, 19, {b, h, wd}, gen, at::kLong);
    at::Tensor target = at::where(changed, other, preds);
    w.batch = {{"preds", preds}, {"target", target}};
    w.batches = {w.batch};  // one batch, read from DRAM each update
    w.streams = true;
    w.updates = quick ? 2 : 10;
    w.runs = quick ? 1 : 3;
  } else if (name == "ssim_batch") {
    // SSIM (Gaussian window, data_range 1) of 16 RGB images of 512 x 512
    // (float32 [16, 3, 512, 512]), each target plus noise; quick: 64 x 64.
    w.specs = {"structural_similarity_index_measure(data_range=1.0)"};
    const int64_t n = quick ? 2 : 16, side = quick ? 64 : 512;
    at::Generator gen = at::detail::createCPUGenerator(7);
    at::Tensor target = at::rand({n, 3, side, side}, gen, at::kFloat);
    at::Tensor noise = at::randn({n, 3, side, side}, gen, at::kFloat);
    at::Tensor preds = at::clamp(target + noise * 0.05, 0.0, 1.0);
    w.batch = {{"preds", preds}, {"target", target}};
    w.updates = quick ? 2 : 5;
    w.runs = quick ? 1 : 3;
  } else if (name == "coco_val" || name == "coco_val_bins" || name == "coco_val_exact16") {
    // COCO val2017's size, synthetic: 5,000 images of 640 x 480 with 3 to
    // 11 ground-truth boxes (7.2 on average: 36,000) over 80 classes, sides
    // 4 to 300 pixels (small, medium and large), and 100 detections an image:
    // each ground-truth box found once or twice, moved by a few pixels, with
    // a score in [0.3, 1), the rest anywhere with a score below 0.5. 100
    // updates of 50 images; quick: 2 of 50. coco_val_bins: the fixed-size
    // state of 100 score bins (15.4 MB however many images);
    // coco_val_exact16: float16 scores, a bin per code (2.36 GB).
    w.specs = {name == "coco_val"        ? "mean_average_precision"
               : name == "coco_val_bins" ? "mean_average_precision(score_bins=100, num_classes=80)"
                                         : "mean_average_precision(score_bins=exact16, num_classes=80)"};
    const int64_t per = 50, updates = quick ? 2 : 100, g = 11, d = 100;
    at::Generator gen = at::detail::createCPUGenerator(7);
    auto boxes = [&](int64_t k) {
      at::Tensor side = at::exp(at::rand({per, k, 2}, gen, at::kFloat) * 4.3) * 4;  // 4 .. 300
      at::Tensor corner = at::rand({per, k, 2}, gen, at::kFloat) * (at::tensor({640.0f, 480.0f}) - side).clamp_min(0);
      return at::cat({corner, corner + side}, 2);
    };
    for (int64_t u = 0; u < updates; ++u) {
      at::Tensor truth = boxes(g);
      at::Tensor count = at::randint(3, g + 1, {per, 1}, gen, at::kLong);
      at::Tensor real = at::arange(g, at::kLong).unsqueeze(0) < count;
      at::Tensor labels = at::where(real, at::randint(0, 80, {per, g}, gen, at::kLong), -1);
      // Two moved copies of every box slot, then boxes anywhere.
      at::Tensor copies = at::cat({truth, truth}, 1) + at::randn({per, 2 * g, 4}, gen, at::kFloat) * 4;
      at::Tensor copy_labels = at::cat({labels, labels}, 1);
      at::Tensor found =
          at::rand({per, 2 * g}, gen, at::kFloat) < at::cat({at::full({1, g}, 0.9), at::full({1, g}, 0.3)}, 1);
      copy_labels = at::where(found, copy_labels, -1);
      at::Tensor rest = boxes(d - 2 * g);
      at::Tensor det_labels = at::cat({copy_labels, at::randint(0, 80, {per, d - 2 * g}, gen, at::kLong)}, 1);
      at::Tensor scores = at::cat(
          {at::rand({per, 2 * g}, gen, at::kFloat) * 0.7 + 0.3, at::rand({per, d - 2 * g}, gen, at::kFloat) * 0.5}, 1);
      if (name == "coco_val_exact16") scores = scores.to(at::kHalf);
      w.batches.push_back({{"boxes", at::cat({copies, rest}, 1)},
                           {"scores", scores},
                           {"labels", det_labels},
                           {"target_boxes", truth},
                           {"target_labels", labels}});
    }
    w.batch = w.batches[0];
    w.updates = updates;
    w.runs = quick ? 1 : 3;
    w.time_compute = true;
  } else if (name == "panoptic_coco") {
    // Panoptic quality over COCO panoptic's 133 categories (things 0..79,
    // stuffs 80..132), synthetic: 8 images of 640 x 480 an update, a
    // category per 16 x 16 block and, for things, one of 4 instances; the
    // prediction redraws one block's category in eight and is shifted 2
    // pixels right. 10 updates of the same batch; quick: 2 images of 64 x 128.
    std::vector<int64_t> things(80), stuffs(53);
    for (int64_t i = 0; i < 80; ++i) things[i] = i;
    for (int64_t i = 0; i < 53; ++i) stuffs[i] = 80 + i;
    w.specs = {absl::StrCat("panoptic_quality(things=[", absl::StrJoin(things, ", "), "], stuffs=[",
                            absl::StrJoin(stuffs, ", "), "], return_sq_and_rq=true)")};
    const int64_t b = quick ? 2 : 8, h = quick ? 64 : 480, wd = quick ? 128 : 640;
    // One statement a draw: the generator's order is the peer's (scripts/peer_bench.py).
    at::Generator gen = at::detail::createCPUGenerator(7);
    at::Tensor cats = at::randint(0, 133, {b, h / 16, wd / 16}, gen, at::kLong);
    at::Tensor insts = at::randint(0, 4, {b, h / 16, wd / 16}, gen, at::kLong);
    at::Tensor redraw = at::rand({b, h / 16, wd / 16}, gen, at::kFloat) < 0.125;
    at::Tensor other = at::randint(0, 133, {b, h / 16, wd / 16}, gen, at::kLong);
    auto up = [](const at::Tensor& t) { return t.repeat_interleave(16, 1).repeat_interleave(16, 2); };
    at::Tensor target = at::stack({up(cats), up(insts)}, 3).contiguous();
    at::Tensor preds = at::stack({up(at::where(redraw, other, cats)), up(insts)}, 3).roll(2, 2).contiguous();
    w.batch = {{"preds", preds}, {"target", target}};
    w.updates = quick ? 2 : 10;
    w.runs = quick ? 1 : 3;
    w.time_compute = true;
  } else if (name == "auroc_binned" || name == "auroc_binned_list") {
    // Binned binary AUROC and AP over 64 thresholds: evenly spaced
    // (thresholds=64), or listed (64 sorted values, one dense constant):
    // the same update, so the same ATen calls.
    std::string thresholds = "64";
    if (name == "auroc_binned_list") {
      std::vector<std::string> values;
      for (int i = 0; i < 64; ++i) values.push_back(absl::StrCat((i * i) / 4096.0));
      thresholds = absl::StrCat("[", absl::StrJoin(values, ", "), "]");
    }
    w.specs = {absl::StrCat("binary_auroc(thresholds=", thresholds, ")"),
               absl::StrCat("binary_average_precision(thresholds=", thresholds, ")")};
    at::Generator gen = at::detail::createCPUGenerator(11);
    at::Tensor target = (at::rand({4096}, gen, at::kFloat) < 0.3).to(at::kLong);
    w.batch = {{"preds", at::rand({4096}, gen, at::kFloat)}, {"target", target}};
    w.updates = quick ? 20 : 2000;
    w.runs = quick ? 2 : 5;
  } else if (name == "auroc_large" || name == "auroc_large_bf16") {
    // Exact binary AUROC and AP over 30,000,000 rows in 30 updates of
    // 1,000,000 scores (int64 targets, 30% positive): float32 scores in cat
    // states, or bfloat16 scores in exact16 counts — there 3 batches cycle,
    // so that the process's peak memory shows the state's, which does not
    // grow with the rows.
    const bool bf16 = name == "auroc_large_bf16";
    w.specs = {"binary_auroc", "binary_average_precision"};
    const int64_t updates = quick ? 3 : 30, rows = quick ? 100000 : 1000000;
    at::Generator gen = at::detail::createCPUGenerator(7);
    for (int64_t u = 0; u < (bf16 ? 3 : updates); ++u) {
      at::Tensor target = (at::rand({rows}, gen, at::kFloat) < 0.3).to(at::kLong);
      at::Tensor preds = at::rand({rows}, gen, at::kFloat) * 0.7 + target.to(at::kFloat) * 0.3;
      w.batches.push_back({{"preds", bf16 ? preds.to(at::kBFloat16) : preds}, {"target", target}});
    }
    w.batch = w.batches[0];
    w.updates = updates;
    w.runs = quick ? 1 : 3;
    w.time_compute = true;
  } else if (name == "reg_large") {
    w.specs = {"mean_squared_error", "mean_absolute_error", "r2_score", "pearson_corrcoef", "concordance_corrcoef"};
    w.batch = RegressionBatch(quick ? 10000 : 1000000);
    w.updates = quick ? 2 : 20;
    w.runs = quick ? 2 : 5;
    w.streams = true;
  } else if (name == "retrieval") {
    // 10,000 queries x 100 documents in 100 updates: update i holds queries
    // [100 i, 100 i + 100), their rows shuffled.
    w.specs = {"retrieval_recall(top_k=10)", "retrieval_precision(top_k=10)", "retrieval_reciprocal_rank",
               "retrieval_normalized_dcg(top_k=10)", "retrieval_average_precision"};
    const int64_t updates = quick ? 4 : 100, queries_per_update = 100, docs = 100;
    const int64_t rows = queries_per_update * docs;
    at::Generator gen = at::detail::createCPUGenerator(7);
    for (int64_t u = 0; u < updates; ++u) {
      at::Tensor perm = at::randperm(rows, gen, at::kLong);
      at::Tensor idx = (at::arange(rows, at::kLong).div(docs, "floor") + u * queries_per_update).index_select(0, perm);
      w.batches.push_back({{"preds", at::rand({rows}, gen, at::kFloat)},
                           {"target", (at::rand({rows}, gen, at::kFloat) < 0.1).to(at::kLong)},
                           {"indexes", idx}});
    }
    w.batch = w.batches[0];
    w.updates = updates;
    w.runs = quick ? 2 : 5;
    w.time_compute = true;
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown workload '", name,
        "' (acc_small, cls_small, cls_large, cls_weighted, cls_sliced, "
        "cls_vocab, cls_imagenet21k, clustering_1k, wer_10k, bleu_10k, rouge_10k, "
        "perplexity_llm, si_sdr_batch, miou_cityscapes, ssim_batch, coco_val, coco_val_bins, coco_val_exact16, "
        "panoptic_coco, auroc_large, "
        "auroc_large_bf16, "
        "auroc_bootstrap, auroc_bootstrap_exact16, reg_large, "
        "retrieval, sync_cls, merge_cls, merge_retrieval)"));
  }
  for (const auto& [n, t] : w.batch) w.input_bytes += t.numel() * t.element_size();
  if (w.streams && w.batches.empty()) {
    // Copies of the batch's distribution under other seeds, as many as fill
    // twice the last-level cache, each read once per cycle.
    const int64_t rows = w.batch.front().second.size(0);
    const int64_t k = std::max<int64_t>(1, (2 * LastLevelCacheBytes()) / static_cast<int64_t>(w.input_bytes) + 1);
    for (int64_t i = 0; i < k; ++i) {
      const uint64_t seed = 7 + static_cast<uint64_t>(i);
      // The classification batches' preds are [rows, C] logits.
      NamedTensors copy = name == "reg_large" ? RegressionBatch(rows, seed)
                                              : ClassificationBatch(rows, w.batch.front().second.size(1), seed);
      if (name == "cls_weighted") copy = Weighted(std::move(copy), seed);
      if (name == "cls_sliced") copy = Grouped(std::move(copy), seed);
      w.batches.push_back(std::move(copy));
    }
    w.updates = std::max<int64_t>(w.updates, k);
  }
  return w;
}

// RunSyncBench is sync_cls: the cls_small collection on 2 forked ranks over
// Gloo on loopback. Each rank updates, then alternates one (untimed) update
// and one timed Sync; rank 0 reports the median Sync time after a warm-up
// and the collectives per Sync.
absl::StatusOr<BenchResult> RunSyncBench(const std::string& backend, bool quick) {
  TALLY_ASSIGN_OR_RETURN(exec::Backend be, exec::ParseBackend(backend));
  const NamedTensors batch = ClassificationBatch(32, 10);
  TALLY_ASSIGN_OR_RETURN(dsl::Signature sig, SignatureOf(batch));
  TALLY_ASSIGN_OR_RETURN(std::vector<dsl::CollectionEntry> entries, BuildEntries(kClsCollection, sig, ir::Device{}));
  CompileOptions co;
  co.backend = be;
  TALLY_ASSIGN_OR_RETURN(std::unique_ptr<Program> program, Compile(entries, co));
  const int warmup = quick ? 5 : 50, timed = quick ? 20 : 500;
  dist::LaunchOptions lo;
  auto outcomes = dist::RunRanks(2, lo, [&](const dist::Rendezvous& rv) -> absl::StatusOr<std::string> {
    TALLY_ASSIGN_OR_RETURN(std::unique_ptr<dist::Group> group, dist::ConnectGloo(rv));
    for (int i = 0; i < 100; ++i) TALLY_RETURN_IF_ERROR(program->Update(batch));
    std::vector<double> times;
    int collectives = 0;
    for (int i = 0; i < warmup + timed; ++i) {
      TALLY_RETURN_IF_ERROR(program->Update(batch));
      auto t0 = Clock::now();
      TALLY_ASSIGN_OR_RETURN(dist::SyncStats stats, dist::Sync(*program, group->pg()));
      if (i >= warmup) times.push_back(SecondsSince(t0));
      collectives = stats.collectives;
    }
    TALLY_RETURN_IF_ERROR(program->Compute().status());
    return absl::StrCat(Median(times) * 1e3, " ", collectives);
  });
  if (!outcomes.ok()) return outcomes.status();
  TALLY_RETURN_IF_ERROR(dist::FirstFailure(*outcomes));
  std::vector<std::string> fields = absl::StrSplit((*outcomes)[0].output, ' ');
  double ms = 0, collectives = 0;
  if (fields.size() != 2 || !absl::SimpleAtod(fields[0], &ms) || !absl::SimpleAtod(fields[1], &collectives)) {
    return absl::InternalError(absl::StrCat("sync_cls: rank 0 reported '", (*outcomes)[0].output, "'"));
  }
  BenchResult r;
  r.workload = "sync_cls";
  r.backend = backend;
  r.aten_calls_per_update = program->num_update_kernels();
  r.ms_per_sync = ms;
  r.collectives_per_sync = collectives;
  return r;
}

// RunMergeBench is merge_cls and merge_retrieval: a shard of the cls_small
// collection (100 updates of 32 rows) or of the retrieval one (one update:
// 100 queries x 100 documents, other queries in each file) saved as a state
// file, and `tally merge`'s work over 100 such files: MergeStates, then the
// compute.
absl::StatusOr<BenchResult> RunMergeBench(const std::string& workload, const std::string& backend, bool quick) {
  const bool cls = workload == "merge_cls";
  TALLY_ASSIGN_OR_RETURN(Workload w, MakeWorkload(cls ? "cls_small" : "retrieval", quick));
  PreparedEval shard;
  shard.specs = w.specs;
  const NamedTensors& first = w.batches.empty() ? w.batch : w.batches[0];
  TALLY_ASSIGN_OR_RETURN(shard.signature, SignatureOf(first));
  TALLY_ASSIGN_OR_RETURN(shard.entries, BuildEntries(w.specs, shard.signature, ir::Device{}));
  EvalOptions eo;
  TALLY_ASSIGN_OR_RETURN(eo.backend, exec::ParseBackend(backend));
  CompileOptions co;
  co.backend = eo.backend;
  TALLY_ASSIGN_OR_RETURN(shard.program, Compile(shard.entries, co));
  const int files = 100, runs = quick ? 1 : 5;
  std::vector<StateSource> sources;
  for (int i = 0; i < files; ++i) {
    // cls: the same rows in each shard (fixed-size states); retrieval:
    // update i of the workload (other queries), cycling. Each file is saved
    // anew: a merge refuses a shard it already holds.
    if (cls ? i == 0 : i < static_cast<int>(w.batches.size())) {
      TALLY_RETURN_IF_ERROR(shard.program->Reset());
      for (int u = 0; u < (cls ? 100 : 1); ++u)
        TALLY_RETURN_IF_ERROR(shard.program->Update(cls ? first : w.batches[i]));
    } else if (!cls) {
      TALLY_RETURN_IF_ERROR(shard.program->Reset());
      TALLY_RETURN_IF_ERROR(shard.program->Update(w.batches[i % w.batches.size()]));
    }
    TALLY_ASSIGN_OR_RETURN(std::string bytes, SaveState(shard));
    sources.push_back({absl::StrCat("shard", i), std::move(bytes)});
  }
  const std::string& bytes = sources[0].bytes;
  std::vector<double> times;
  for (int run = 0; run < runs; ++run) {
    auto t0 = Clock::now();
    TALLY_ASSIGN_OR_RETURN(MergedStates merged, MergeStates(sources, eo));
    TALLY_RETURN_IF_ERROR(merged.program->Compute().status());
    times.push_back(SecondsSince(t0));
  }
  BenchResult r;
  r.workload = workload;
  r.backend = backend;
  r.aten_calls_per_update = shard.program->num_update_kernels();
  r.state_file_bytes = static_cast<double>(bytes.size());
  r.sources_merged = files;
  r.ms_merge = Median(times) * 1e3;
  r.state_bytes = static_cast<double>(shard.program->module().FixedStateBytes());
  r.peak_rss_mb = PeakRssMb();
  return r;
}

}  // namespace

std::vector<std::string> BenchWorkloads() {
  return {"acc_small",        "cls_small",        "cls_large",         "cls_weighted",
          "cls_sliced",       "cls_vocab",        "cls_imagenet21k",   "clustering_1k",
          "auroc_large",      "auroc_large_bf16", "auroc_bootstrap",   "auroc_bootstrap_exact16",
          "reg_large",        "retrieval",        "sync_cls",          "merge_cls",
          "merge_retrieval",  "auroc_binned",     "auroc_binned_list", "wer_10k",
          "bleu_10k",         "rouge_10k",        "perplexity_llm",    "si_sdr_batch",
          "miou_cityscapes",  "ssim_batch",       "coco_val",          "coco_val_bins",
          "coco_val_exact16", "panoptic_coco"};
}

absl::StatusOr<BenchResult> RunBench(const std::string& workload, const std::string& backend, bool quick,
                                     const ir::Device& device) {
  const bool on_cpu = device == ir::Device{};
  if (workload == "sync_cls" || workload == "merge_cls" || workload == "merge_retrieval") {
    if (!on_cpu) {
      return absl::UnimplementedError(absl::StrCat("workload '", workload, "' runs on cpu only (its ranks fork)"));
    }
    if (workload == "sync_cls") return RunSyncBench(backend, quick);
    return RunMergeBench(workload, backend, quick);
  }
  TALLY_ASSIGN_OR_RETURN(c10::Device dev, ir::ToDevice(device));
  if (dev.is_meta()) return absl::InvalidArgumentError("bench --device meta: meta tensors hold no values to time");
  TALLY_ASSIGN_OR_RETURN(exec::Backend be, exec::ParseBackend(backend));
  TALLY_ASSIGN_OR_RETURN(Workload w, MakeWorkload(workload, quick));
  TALLY_ASSIGN_OR_RETURN(dsl::Signature sig, SignatureOf(w.batch));
  TALLY_ASSIGN_OR_RETURN(std::vector<dsl::CollectionEntry> entries, BuildEntries(w.specs, sig, device));
  if (!on_cpu) {
    // The inputs wait on the device, as a model's outputs do.
    auto to_device = [&](NamedTensors& batch) {
      for (auto& [n, t] : batch) t = t.to(dev);
    };
    to_device(w.batch);
    for (NamedTensors& b : w.batches) to_device(b);
  }
  CompileOptions co;
  co.backend = be;
  co.device = device;
  TALLY_ASSIGN_OR_RETURN(std::unique_ptr<Program> program, Compile(entries, co));
  BenchResult r;
  r.workload = workload;
  r.backend = backend;
  if (!on_cpu) r.device = device.name;
  r.aten_calls_per_update = program->num_update_kernels();
  // Warm up, then time.
  auto batch = [&](int64_t i) -> const NamedTensors& {
    return w.batches.empty() ? w.batch : w.batches[i % w.batches.size()];
  };
  for (int i = 0; i < std::min<int64_t>(w.updates, 100); ++i) TALLY_RETURN_IF_ERROR(program->Update(batch(i)));
  // update_pass resets and times one pass of w.updates updates into `out`.
  auto update_pass = [&](std::vector<double>& out) -> absl::Status {
    TALLY_RETURN_IF_ERROR(program->Reset());
    WaitFor(dev);
    auto t0 = Clock::now();
    for (int64_t i = 0; i < w.updates; ++i) TALLY_RETURN_IF_ERROR(program->Update(batch(i)));
    WaitFor(dev);
    out.push_back(SecondsSince(t0) / w.updates);
    return absl::OkStatus();
  };
  std::vector<double> per_update, per_update_cold, compute;
  for (int run = 0; run < w.runs; ++run) TALLY_RETURN_IF_ERROR(update_pass(per_update));
  TALLY_RETURN_IF_ERROR(program->Compute().status());
  // Compute runs apart from the update passes above: its sort streams
  // through far more memory than the caches hold, so the pass after it reads
  // its inputs from DRAM. Those passes are reported on their own.
  for (int run = 0; w.time_compute && run < w.runs; ++run) {
    TALLY_RETURN_IF_ERROR(update_pass(per_update_cold));
    auto t1 = Clock::now();
    TALLY_RETURN_IF_ERROR(program->Compute().status());
    WaitFor(dev);
    compute.push_back(SecondsSince(t1));
  }
  double sec = Median(per_update);
  r.us_per_update = sec * 1e6;
  if (!compute.empty()) r.ms_compute = Median(compute) * 1e3;
  if (!per_update_cold.empty()) r.us_per_update_cold = Median(per_update_cold) * 1e6;
  r.state_bytes = static_cast<double>(program->module().FixedStateBytes());
  r.peak_rss_mb = PeakRssMb();  // before the probe's tensor
  if (w.streams) {
    // Each update reads its own batch's bytes, from DRAM (Workload::streams).
    r.gb_per_s = w.input_bytes / sec / 1e9;
    const ReadProbe probe = ReadBandwidth(quick, dev);
    r.read_gb_per_s = probe.gb_per_s;
    r.read_gb_per_s_spread = probe.spread;
    r.read_probe_bytes = probe.bytes;
    r.read_probe_runs = probe.runs;
    r.bandwidth_fraction = *r.gb_per_s / *r.read_gb_per_s;
  }
  return r;
}

std::string BenchToJson(const BenchResult& r) {
  std::string out = absl::StrCat("{\"workload\": ", JsonString(r.workload), ", \"backend\": ", JsonString(r.backend));
  if (r.device) absl::StrAppend(&out, ", \"device\": ", JsonString(*r.device));
  auto field = [&](const char* k, const std::optional<double>& v) {
    if (v) absl::StrAppend(&out, ", \"", k, "\": ", *v);
  };
  field("us_per_update", r.us_per_update);
  field("ms_compute", r.ms_compute);
  field("us_per_update_cold", r.us_per_update_cold);
  field("gb_per_s", r.gb_per_s);
  field("ms_per_sync", r.ms_per_sync);
  field("collectives_per_sync", r.collectives_per_sync);
  field("read_gb_per_s", r.read_gb_per_s);
  field("read_gb_per_s_spread", r.read_gb_per_s_spread);
  if (r.read_probe_bytes) absl::StrAppend(&out, ", \"read_probe_bytes\": ", static_cast<int64_t>(*r.read_probe_bytes));
  field("read_probe_runs", r.read_probe_runs);
  field("bandwidth_fraction", r.bandwidth_fraction);
  // Bytes print whole (a double's six significant digits would round them).
  if (r.state_bytes) absl::StrAppend(&out, ", \"state_bytes\": ", static_cast<int64_t>(*r.state_bytes));
  if (r.state_file_bytes) {
    absl::StrAppend(&out, ", \"state_file_bytes\": ", static_cast<int64_t>(*r.state_file_bytes));
  }
  field("sources_merged", r.sources_merged);
  field("ms_merge", r.ms_merge);
  field("peak_rss_mb", r.peak_rss_mb);
  absl::StrAppend(&out, ", \"aten_calls_per_update\": ", r.aten_calls_per_update, "}");
  return out;
}

std::string BenchSkippedToJson(const std::string& workload, const std::string& backend, absl::string_view why) {
  return absl::StrCat("{\"workload\": ", JsonString(workload), ", \"backend\": ", JsonString(backend),
                      ", \"skipped\": ", JsonString(why), "}");
}

std::string BenchToTable(const BenchResult& r) {
  // sync_cls runs in 2 forked ranks of one intra-op thread each.
  std::string where = r.workload == "sync_cls" ? "2 ranks x 1 thread" : absl::StrCat(at::get_num_threads(), " threads");
  if (r.device) where = absl::StrCat(*r.device, ", ", where);
  std::string out = absl::StrCat("workload  ", r.workload, " (", r.backend, ", ", where, ")\n");
  auto row = [&](const char* k, const std::optional<double>& v, const char* unit) {
    if (v) absl::StrAppend(&out, "  ", k, ": ", *v, unit, "\n");
  };
  row("us_per_update", r.us_per_update, " us");
  row("ms_compute", r.ms_compute, " ms");
  row("us_per_update_cold", r.us_per_update_cold, " us");
  row("gb_per_s", r.gb_per_s, " GB/s");
  row("ms_per_sync", r.ms_per_sync, " ms");
  row("collectives_per_sync", r.collectives_per_sync, "");
  if (r.read_gb_per_s) {
    absl::StrAppend(&out, "  read_gb_per_s: ", *r.read_gb_per_s, " GB/s (plain sum over ",
                    static_cast<int64_t>(r.read_probe_bytes.value_or(0) / 1e6), " MB: the median of ",
                    r.read_probe_runs.value_or(0), " runs, spread ", 100 * r.read_gb_per_s_spread.value_or(0),
                    "% of it)\n");
  }
  row("bandwidth_fraction", r.bandwidth_fraction, "");
  if (r.state_bytes) {
    absl::StrAppend(&out, "  state_bytes: ", static_cast<int64_t>(*r.state_bytes), " bytes (fixed-size states)\n");
  }
  if (r.state_file_bytes) {
    absl::StrAppend(&out, "  state_file_bytes: ", static_cast<int64_t>(*r.state_file_bytes), " bytes (one shard)\n");
  }
  row("sources_merged", r.sources_merged, "");
  row("ms_merge", r.ms_merge, " ms (MergeStates of every source + compute)");
  row("peak_rss_mb", r.peak_rss_mb, " MB (peak resident, whole process)");
  absl::StrAppend(&out, "  aten_calls_per_update: ", r.aten_calls_per_update, "\n");
  return out;
}

}  // namespace tally::tools
