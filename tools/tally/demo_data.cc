#include "tools/tally/demo_data.h"

#include <algorithm>

#include <ATen/ATen.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "metrics/registry.h"
#include "metrics/spec.h"

namespace tally::tools {

namespace {

// DemoKind is the input form the demo data takes.
struct DemoKind {
  std::string domain = "multiclass";  // multiclass, binary, multilabel, regression, aggregation, retrieval, ...
  int64_t classes = 0;                // num_classes / num_labels the specs ask for (0: default)
  bool rows = false;                  // regression as (N, d) positive rows (kl_divergence, cosine)
  int64_t groups = 0;                 // num_groups: binary rows with a `groups` id
  bool target = false;                // some spec reads `target` (demographic_parity alone does not)
  bool words = false;                 // chrF++ reads word ids beside its characters
  std::vector<int64_t> things = {0, 1}, stuffs = {2, 3};  // panoptic_quality's categories
};

// KindOf reads what `specs` need: a task prefix or `task=` argument picks the
// classification form (curves, calibration, hinge and ranking metrics
// included), the registry domain the others; num_classes/num_labels size it.
DemoKind KindOf(const std::vector<std::string>& specs) {
  DemoKind k;
  for (const std::string& s : specs) {
    auto spec = metrics::ParseMetricSpec(s);
    if (!spec.ok()) continue;
    const metrics::MetricInfo* info = metrics::FindMetric(spec->name);
    if (absl::StartsWith(spec->name, "binary_"))
      k.domain = "binary";
    else if (absl::StartsWith(spec->name, "multilabel_"))
      k.domain = "multilabel";
    else if (absl::StartsWith(spec->name, "multiclass_"))
      k.domain = "multiclass";
    else if (info && (info->domain == "regression" || info->domain == "aggregation" || info->domain == "retrieval")) {
      k.domain = info->domain;
    }
    if (spec->name == "kl_divergence" || spec->name == "cosine_similarity" ||
        spec->name == "jensen_shannon_divergence") {
      k.rows = true;
    }
    if (spec->name == "continuous_ranked_probability_score") k.domain = "ensemble";
    if (info && info->domain == "text") k.domain = spec->name == "perplexity" ? "logits" : "tokens";
    if (spec->name == "chrf_score") {
      k.words = true;
      for (const auto& [key, v] : spec->args)
        k.words = k.words && !(key == "n_word_order" && v == metrics::ArgValue(int64_t{0}));
    }
    if (info && info->domain == "audio") {
      k.domain = absl::StrContains(s, "complex_") ? "spectra" : "waves";
    }
    if (info && info->domain == "fairness") k.domain = "binary";
    if (info && info->domain == "segmentation") {
      k.domain = "masks";
      for (const auto& [key, v] : spec->args) {
        if (key == "input_format" && v == metrics::ArgValue(std::string("index"))) k.domain = "index_masks";
      }
    }
    if (info && info->domain == "image") {
      k.domain = spec->name == "frechet_inception_distance"    ? "features"
                 : spec->name == "total_variation"             ? "img"
                 : absl::StartsWith(spec->name, "multiscale_") ? "large_images"
                                                               : "images";
    }
    if (info && info->domain == "detection") {
      k.domain = spec->name == "mean_average_precision" ? "detections"
                 : spec->name == "panoptic_quality"     ? "panoptic"
                                                        : "boxes";
    }
    for (const auto& [key, v] : spec->args) {
      const auto* ids = std::get_if<std::vector<int64_t>>(&v);
      if (spec->name != "panoptic_quality" || ids == nullptr || ids->empty()) continue;
      if (key == "things") k.things = *ids;
      if (key == "stuffs") k.stuffs = *ids;
    }
    if (info && (info->domain == "clustering" || info->domain == "nominal")) {
      k.domain = spec->name == "fleiss_kappa" ? "ratings" : info->inputs[0] == "data" ? "points" : "labels";
      for (const auto& [key, v] : spec->args) {
        if (key == "mode" && std::holds_alternative<std::string>(v) && std::get<std::string>(v) == "probs") {
          k.domain = "rater_scores";
        }
      }
    }
    if (!info || std::find(info->inputs.begin(), info->inputs.end(), "target") != info->inputs.end()) k.target = true;
    for (const auto& [key, v] : spec->args) {
      if (key == "num_groups" && std::holds_alternative<int64_t>(v)) {
        int64_t g = std::get<int64_t>(v);
        if (g >= 1 && g <= 1000) k.groups = std::max(k.groups, g);
      }
      // A task wrapper (accuracy(task=binary), ...) takes its task's inputs.
      if (key == "task" && info && info->domain == "task_wrapper" && std::holds_alternative<std::string>(v)) {
        k.domain = absl::AsciiStrToLower(std::get<std::string>(v));
      }
      if ((key == "num_classes" || key == "num_labels" || key == "num_clusters") &&
          std::holds_alternative<int64_t>(v)) {
        int64_t c = std::get<int64_t>(v);
        if (c >= 2 && c <= 1000) k.classes = c;
      }
    }
  }
  return k;
}

}  // namespace

DemoData MakeDemoData(const std::vector<std::string>& specs) {
  // A fixed generator keeps the demo's numbers stable across runs.
  at::Generator gen = at::detail::createCPUGenerator(20261122);
  const int64_t n = 64;
  const DemoKind kind = KindOf(specs);
  DemoData d;
  if (kind.domain == "regression" && kind.rows) {
    at::Tensor target = at::rand({n, 4}, gen, at::kFloat) + 0.1;
    at::Tensor preds = target + at::rand({n, 4}, gen, at::kFloat) * 0.2;
    d.inputs = {{"preds", preds}, {"target", target}};
    d.specs = {"kl_divergence"};
    d.description = "64 rows of 4 positive weights";
  } else if (kind.domain == "ensemble") {
    // 64 observations, each with a 5-member forecast ensemble around it.
    at::Tensor target = at::randn({n}, gen, at::kFloat) * 2 + 10;
    at::Tensor preds = target.unsqueeze(1) + at::randn({n, 5}, gen, at::kFloat);
    d.inputs = {{"preds", preds}, {"target", target}};
    d.specs = {"continuous_ranked_probability_score"};
    d.description = "64 observations with 5-member ensembles";
  } else if (kind.domain == "regression") {
    at::Tensor target = at::randn({n}, gen, at::kFloat) * 2 + 10;
    at::Tensor preds = target + at::randn({n}, gen, at::kFloat) * 0.5;
    d.inputs = {{"preds", preds}, {"target", target}};
    d.specs = {"mean_squared_error", "mean_absolute_error", "r2_score", "pearson_corrcoef"};
    d.description = "64 regression pairs";
  } else if (kind.domain == "aggregation") {
    d.inputs = {{"value", at::randn({n}, gen, at::kFloat)}};
    d.specs = {"mean", "sum", "max", "min"};
    d.description = "64 values";
  } else if (kind.domain == "retrieval") {
    at::Tensor target = at::randint(0, 2, {n}, gen, at::kLong);
    at::Tensor preds = target.to(at::kFloat) * 0.3 + at::rand({n}, gen, at::kFloat) * 0.7;
    d.inputs = {{"preds", preds}, {"target", target}, {"indexes", at::arange(n, at::kLong).remainder(8)}};
    d.specs = {"retrieval_recall(top_k=3)", "retrieval_reciprocal_rank", "retrieval_normalized_dcg"};
    d.description = "8 queries of 8 documents";
  } else if (kind.domain == "binary") {
    at::Tensor target = at::randint(0, 2, {n}, gen, at::kLong);
    at::Tensor preds = (target.to(at::kFloat) * 0.6 + at::rand({n}, gen, at::kFloat) * 0.4);
    d.inputs = {{"preds", preds}, {"target", target}};
    d.specs = {"binary_accuracy", "binary_f1_score"};
    d.description = "64 binary probabilities and labels";
    if (!kind.target) d.inputs.pop_back();
    if (kind.groups > 0) {
      // Row i in group i mod G: every group has rows.
      d.inputs.emplace_back("groups", at::arange(n, at::kLong).remainder(kind.groups));
      absl::StrAppend(&d.description, " in ", kind.groups, " groups");
    }
  } else if (kind.domain == "labels") {
    // Cluster ids that follow the classes for about two rows in three.
    const int64_t c = kind.classes > 0 ? kind.classes : 3;
    at::Tensor target = at::randint(0, c, {n}, gen, at::kLong);
    at::Tensor other = at::randint(0, c, {n}, gen, at::kLong);
    at::Tensor preds = at::where(at::rand({n}, gen, at::kFloat) < 0.67, target, other);
    d.inputs = {{"preds", preds}, {"target", target}};
    d.specs = {"adjusted_rand_score(num_classes=3)", "normalized_mutual_info_score(num_classes=3)",
               "cramers_v(num_classes=3)"};
    d.description = absl::StrCat("64 cluster ids and ", c, " classes");
  } else if (kind.domain == "points") {
    // 2-D points around c centres 5 apart, with their cluster ids.
    const int64_t c = kind.classes > 0 ? kind.classes : 4;
    at::Tensor ids = at::arange(n, at::kLong).remainder(c);
    at::Tensor centres = at::randn({c, 2}, gen, at::kFloat) * 5;
    d.inputs = {{"data", centres.index_select(0, ids) + at::randn({n, 2}, gen, at::kFloat)}, {"labels", ids}};
    d.specs = {"calinski_harabasz_score(num_clusters=4)", "davies_bouldin_score(num_clusters=4)",
               "dunn_index(num_clusters=4)"};
    d.description = absl::StrCat("64 2-D points in ", c, " clusters");
  } else if (kind.domain == "tokens") {
    // Transcripts as word ids: each reference of 6-12 words (a 12-wide row,
    // -1 padding) heard with about one word in five substituted, dropped or
    // doubled.
    at::Tensor target = at::randint(0, 50, {n, 12}, gen, at::kLong);
    at::Tensor len = at::randint(6, 13, {n, 1}, gen, at::kLong);
    target = at::where(at::arange(12, at::kLong).unsqueeze(0) < len, target, -1);
    at::Tensor noise = at::rand({n, 12}, gen, at::kFloat);
    at::Tensor preds = at::where(noise < 0.07, at::randint(0, 50, {n, 12}, gen, at::kLong), target);
    preds = at::where(noise > 0.93, -1, preds);
    preds = at::cat({preds, at::where(noise < 0.035, target, -1)}, 1);
    d.inputs = {{"preds", preds}, {"target", target}};
    // chrF++'s word ids: the same transcripts (their ids stand for words and characters alike).
    if (kind.words) d.inputs.insert(d.inputs.end(), {{"preds_words", preds}, {"target_words", target}});
    d.specs = {"word_error_rate", "match_error_rate", "word_information_lost"};
    d.description = "64 transcripts of 6-12 word ids against their references";
  } else if (kind.domain == "masks" || kind.domain == "index_masks") {
    // Segmentation masks of 16 x 16: a class per 4 x 4 block, predicted with
    // one pixel in eight wrong; one-hot [N, C, 16, 16] or ids [N, 16, 16].
    const int64_t c = kind.classes > 0 ? kind.classes : 3;
    at::Tensor target = at::randint(0, c, {n, 4, 4}, gen, at::kLong).repeat_interleave(4, 1).repeat_interleave(4, 2);
    at::Tensor wrong = at::rand({n, 16, 16}, gen, at::kFloat) < 0.125;
    at::Tensor preds = at::where(wrong, at::randint(0, c, {n, 16, 16}, gen, at::kLong), target);
    if (kind.domain == "masks") {
      preds = at::one_hot(preds, c).permute({0, 3, 1, 2}).contiguous();
      target = at::one_hot(target, c).permute({0, 3, 1, 2}).contiguous();
    }
    d.inputs = {{"preds", preds}, {"target", target}};
    const std::string format = kind.domain == "masks" ? "" : ", input_format=index";
    d.specs = {absl::StrCat("mean_iou(num_classes=", c, format, ")"),
               absl::StrCat("dice_score(num_classes=", c, format, ")")};
    d.description = absl::StrCat(n, " masks of 16 x 16 over ", c, " classes",
                                 kind.domain == "masks" ? " (one-hot)" : " (class ids)", ", one pixel in eight wrong");
  } else if (kind.domain == "images" || kind.domain == "large_images" || kind.domain == "img") {
    // RGB images in [0, 1] and noisy copies: 32 x 32 (192 x 192 for the
    // five scales of MS-SSIM, 8 of them).
    const int64_t count = kind.domain == "large_images" ? 8 : n, side = kind.domain == "large_images" ? 192 : 32;
    at::Tensor target = at::rand({count, 3, side, side}, gen, at::kFloat);
    at::Tensor preds = at::clamp(target + at::randn({count, 3, side, side}, gen, at::kFloat) * 0.05, 0.0, 1.0);
    d.inputs =
        kind.domain == "img" ? NamedTensors{{"img", target}} : NamedTensors{{"preds", preds}, {"target", target}};
    d.specs = kind.domain == "img" ? std::vector<std::string>{"total_variation"}
              : kind.domain == "large_images"
                  ? std::vector<std::string>{"multiscale_structural_similarity_index_measure(data_range=1.0)"}
                  : std::vector<std::string>{"peak_signal_noise_ratio(data_range=1.0)",
                                             "structural_similarity_index_measure(data_range=1.0)"};
    d.description = absl::StrCat(count, " RGB images of ", side, " x ", side,
                                 kind.domain == "img" ? "" : " and their copies with noise");
  } else if (kind.domain == "detections" || kind.domain == "boxes") {
    // Images of 640 x 480 with 4 ground-truth boxes over 3 classes (sides 10
    // to 210: small, medium and large), detected as the boxes moved by a few
    // pixels with scores in [0.5, 1) plus 4 boxes anywhere with scores below
    // 0.6; box pairs: each box and its moved copy.
    const int64_t g = 4;
    auto corners = [&](int64_t k) {
      at::Tensor xy = at::rand({n, k, 2}, gen, at::kFloat) * at::tensor({440.0f, 280.0f});
      return at::cat({xy, xy + at::rand({n, k, 2}, gen, at::kFloat) * 200 + 10}, 2).round();
    };
    at::Tensor truth = corners(g);
    at::Tensor moved = (truth + at::randn({n, g, 4}, gen, at::kFloat) * 4).round();
    at::Tensor labels = at::randint(0, 3, {n, g}, gen, at::kLong);
    if (kind.domain == "boxes") {
      d.inputs = {{"preds", moved.view({n * g, 4})}, {"target", truth.view({n * g, 4})}};
      d.specs = {"intersection_over_union", "generalized_intersection_over_union"};
      d.description = absl::StrCat(n * g, " ground-truth boxes and their detections, moved by a few pixels");
    } else {
      d.inputs = {
          {"boxes", at::cat({moved, corners(g)}, 1)},
          {"scores",
           at::cat({at::rand({n, g}, gen, at::kFloat) * 0.5 + 0.5, at::rand({n, g}, gen, at::kFloat) * 0.6}, 1)},
          {"labels", at::cat({labels, at::randint(0, 3, {n, g}, gen, at::kLong)}, 1)},
          {"target_boxes", truth},
          {"target_labels", labels}};
      d.specs = {"mean_average_precision"};
      d.description = absl::StrCat(n, " images of 640 x 480, ", g, " ground-truth boxes each over 3 classes, ", g,
                                   " detections near them and ", g, " anywhere");
    }
  } else if (kind.domain == "panoptic") {
    // Panoptic images of 32 x 32 (category, instance) points over the
    // specs' things and stuffs (0, 1 and 2, 3 by default), in 8 x 8 tiles of
    // 3 instances; the prediction redraws one tile in six and moves every
    // tile's edge by a point.
    std::vector<int64_t> ids = kind.things;
    ids.insert(ids.end(), kind.stuffs.begin(), kind.stuffs.end());
    const at::Tensor id = at::tensor(ids, at::kLong);
    const int64_t c = static_cast<int64_t>(ids.size());
    auto tiles = [&](int64_t k) { return at::randint(0, k, {n, 4, 4, 1}, gen, at::kLong); };
    auto image = [](const at::Tensor& t) { return t.repeat_interleave(8, 1).repeat_interleave(8, 2); };
    at::Tensor cats = tiles(c), insts = tiles(3);
    at::Tensor redraw = at::rand({n, 4, 4, 1}, gen, at::kFloat) < 1.0 / 6;
    at::Tensor target = at::cat({image(id.index({cats})), image(insts)}, 3);
    at::Tensor preds = at::cat({image(id.index({at::where(redraw, tiles(c), cats)})), image(insts)}, 3).roll(1, 2);
    d.inputs = {{"preds", preds}, {"target", target}};
    d.specs = {absl::StrCat("panoptic_quality(things=[", absl::StrJoin(kind.things, ", "), "], stuffs=[",
                            absl::StrJoin(kind.stuffs, ", "), "], return_sq_and_rq=true)")};
    d.description =
        absl::StrCat(n, " panoptic images of 32 x 32 over things ", absl::StrJoin(kind.things, ", "), " and stuffs ",
                     absl::StrJoin(kind.stuffs, ", "), ", one tile in six mislabelled, every edge off by a point");
  } else if (kind.domain == "features") {
    // Features of 64 real and 64 generated images, [N, 16], the generated
    // ones shifted and spread.
    d.inputs = {{"real_features", at::randn({n, 16}, gen, at::kFloat)},
                {"fake_features", at::randn({n, 16}, gen, at::kFloat) * 1.2 + 0.3}};
    d.specs = {"frechet_inception_distance"};
    d.description = absl::StrCat("features [", n, ", 16] of real and generated images");
  } else if (kind.domain == "logits") {
    // A language model's logits over a 100-word vocabulary for 8 sequences
    // of 32 tokens, the right token raised by 3 (a model better than chance).
    at::Tensor target = at::randint(0, 100, {8, 32}, gen, at::kLong);
    at::Tensor logits = at::randn({8, 32, 100}, gen, at::kFloat) * 2 + at::one_hot(target, 100).to(at::kFloat) * 3;
    d.inputs = {{"preds", logits}, {"target", target}};
    d.specs = {"perplexity"};
    d.description = "8 sequences of 32 tokens: a model's logits over a 100-word vocabulary, the right token raised";
  } else if (kind.domain == "waves" || kind.domain == "spectra") {
    // Two speakers a mixture, estimated with noise, the speakers of every
    // other mixture swapped (what permutation_invariant_training undoes).
    const bool spectra = kind.domain == "spectra";
    std::vector<int64_t> shape = spectra ? std::vector<int64_t>{n, 2, 16, 25, 2} : std::vector<int64_t>{n, 2, 800};
    at::Tensor target = at::randn(shape, gen, at::kFloat);
    at::Tensor preds = target + at::randn(shape, gen, at::kFloat) * 0.3;
    at::Tensor swap = (at::arange(n, at::kLong).remainder(2) == 1).view({n, 1, 1}).expand({n, 2, 1});
    for (size_t d = 3; d < shape.size(); ++d) swap = swap.unsqueeze(-1);
    preds = at::where(swap, preds.flip({1}), preds);
    d.inputs = {{"preds", preds}, {"target", target}};
    d.specs = spectra ? std::vector<std::string>{"complex_scale_invariant_signal_noise_ratio"}
                      : std::vector<std::string>{
                            "scale_invariant_signal_distortion_ratio", "signal_noise_ratio",
                            "permutation_invariant_training(metric=scale_invariant_signal_distortion_ratio)"};
    d.description =
        spectra ? "64 two-speaker spectrograms (16 x 25 bins, real and imaginary), half with the speakers swapped"
                : "64 two-speaker mixtures of 800 samples, half with the speakers swapped";
  } else if (kind.domain == "rater_scores") {
    // 5 raters' scores over 3 categories, [N, 3, 5].
    d.inputs = {{"ratings", at::rand({n, 3, 5}, gen, at::kFloat)}};
    d.specs = {"fleiss_kappa(mode=probs)"};
    d.description = "64 samples scored by 5 raters over 3 categories";
  } else if (kind.domain == "ratings") {
    // 5 raters per sample over 3 categories.
    at::Tensor choice = at::randint(0, 3, {n, 5}, gen, at::kLong);
    d.inputs = {{"ratings", at::one_hot(choice, 3).sum(1)}};
    d.specs = {"fleiss_kappa"};
    d.description = "64 samples rated by 5 raters over 3 categories";
  } else if (kind.domain == "multilabel") {
    const int64_t l = kind.classes > 0 ? kind.classes : 4;
    at::Tensor target = at::randint(0, 2, {n, l}, gen, at::kLong);
    at::Tensor preds = (target.to(at::kFloat) * 0.6 + at::rand({n, l}, gen, at::kFloat) * 0.4);
    d.inputs = {{"preds", preds}, {"target", target}};
    d.specs = {"multilabel_accuracy(num_labels=4)", "multilabel_f1_score(num_labels=4)"};
    d.description = absl::StrCat("64 rows of ", l, " labels");
  } else {
    const int64_t c = kind.classes > 0 ? kind.classes : 3;
    at::Tensor target = at::randint(0, c, {n}, gen, at::kLong);
    at::Tensor logits = at::randn({n, c}, gen, at::kFloat);
    logits.scatter_add_(1, target.unsqueeze(1), at::full({n, 1}, 1.5, at::kFloat));
    d.inputs = {{"preds", logits}, {"target", target}};
    d.specs = {"multiclass_accuracy(num_classes=3)", "multiclass_f1_score(num_classes=3, average=macro)",
               "multiclass_confusion_matrix(num_classes=3)"};
    d.description = absl::StrCat("64 rows of ", c, "-class logits and labels");
  }
  return d;
}

}  // namespace tally::tools
