#include "tests/testlib/random_inputs.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "api/tally.h"
#include "gtest/gtest.h"

namespace tally::testing {
namespace {

// WrapperSpec is the spec of task wrapper `m` (accuracy, auroc, ...) for
// `task`: SpecFor of the task metric it dispatches to, renamed, with `task`
// first ("fbeta_score(task=multiclass, num_classes=3, beta=2.0)"); empty if
// no such task metric is registered (exact_match has no binary task).
std::string WrapperSpec(const metrics::MetricInfo& m, const std::string& task) {
  const metrics::MetricInfo* t = metrics::FindMetric(absl::StrCat(task, "_", m.name));
  if (t == nullptr) return "";
  std::string spec = SpecFor(*t).substr(task.size() + 1);
  size_t paren = spec.find('(');
  if (paren == std::string::npos) return absl::StrCat(spec, "(task=", task, ")");
  return absl::StrCat(spec.substr(0, paren + 1), "task=", task, ", ", spec.substr(paren + 1));
}

}  // namespace

std::string SpecFor(const metrics::MetricInfo& m) {
  const std::string& name = m.name;
  if (m.domain == "task_wrapper") return WrapperSpec(m, "multiclass");
  if (absl::StrContains(name, "_at_")) {  // recall_at_fixed_precision & co. require min_precision & co.
    std::string min = absl::StrCat("min_", name.substr(name.rfind('_') + 1), "=0.5");
    if (absl::StartsWith(name, "multiclass_")) return absl::StrCat(name, "(num_classes=3, ", min, ")");
    if (absl::StartsWith(name, "multilabel_")) return absl::StrCat(name, "(num_labels=3, ", min, ")");
    return absl::StrCat(name, "(", min, ")");
  }
  if (absl::StartsWith(name, "multiclass_")) {
    return absl::StrCat(name, absl::StrContains(name, "fbeta") ? "(num_classes=3, beta=2.0)" : "(num_classes=3)");
  }
  if (absl::StartsWith(name, "multilabel_")) {
    return absl::StrCat(name, absl::StrContains(name, "fbeta") ? "(num_labels=3, beta=2.0)" : "(num_labels=3)");
  }
  if (absl::StrContains(name, "fbeta")) return absl::StrCat(name, "(beta=2.0)");
  if (m.domain == "aggregation") return absl::StrCat(name, "(nan_strategy=error)");
  if (name == "minkowski_distance") return absl::StrCat(name, "(p=3.0)");
  if (name == "critical_success_index") return absl::StrCat(name, "(threshold=0.5)");
  if (m.domain == "fairness") return absl::StrCat(name, "(num_groups=3)");  // the grp forms' ids are in [0, 3)
  if (m.domain == "clustering" && m.inputs[0] == "data") return absl::StrCat(name, "(num_clusters=3)");
  if (m.domain == "clustering" || (m.domain == "nominal" && name != "fleiss_kappa")) {
    return absl::StrCat(name, "(num_classes=3)");
  }
  if (name == "permutation_invariant_training")
    return absl::StrCat(name, "(metric=scale_invariant_signal_distortion_ratio)");
  if (name == "perplexity") return absl::StrCat(name, "(ignore_index=-100)");
  // The forms' signals are 8 samples: 4 taps (at most n_fft - time + 1 = 9).
  if (name == "signal_distortion_ratio") return absl::StrCat(name, "(filter_length=4)");
  if (m.domain == "segmentation") return absl::StrCat(name, "(num_classes=3)");
  if (name == "panoptic_quality") return absl::StrCat(name, "(things=[0, 1], stuffs=[2])");  // the pan forms' ids
  // The forms' images are 12 x 12: two scales of a 5-wide window.
  if (name == "multiscale_structural_similarity_index_measure") {
    return absl::StrCat(name, "(betas=[0.5, 0.5], kernel_size=3, sigma=0.5)");
  }
  return name;
}

std::string WithArg(const std::string& spec, const std::string& arg) {
  if (!spec.empty() && spec.back() == ')') return absl::StrCat(spec.substr(0, spec.size() - 1), ", ", arg, ")");
  return absl::StrCat(spec, "(", arg, ")");
}

std::vector<std::string> SpecsFor(const metrics::MetricInfo& m) {
  std::vector<std::string> out = {SpecFor(m)};
  if (m.domain == "task_wrapper") {  // the other tasks; a binned curve
    for (const char* task : {"binary", "multilabel"}) {
      if (std::string spec = WrapperSpec(m, task); !spec.empty()) out.push_back(spec);
    }
    const metrics::MetricInfo* mc = metrics::FindMetric(absl::StrCat("multiclass_", m.name));
    if (mc != nullptr && mc->domain == "curves") out.push_back(WithArg(out[0], "thresholds=5"));
    return out;
  }
  if (m.domain == "curves") {
    out.push_back(WithArg(out[0], "thresholds=5"));
    out.push_back(WithArg(out[0], "thresholds=[0.2, 0.5, 0.7]"));
  }
  if (m.name == "tweedie_deviance_score") {  // the log/series and the general power forms
    out.push_back(WithArg(out[0], "power=1.0"));
    out.push_back(WithArg(out[0], "power=1.5"));
  }
  if (m.name == "critical_success_index") out.push_back(WithArg(out[0], "keep_sequence_dim=0"));  // cat states
  if (m.name == "kl_divergence") out.push_back(WithArg(out[0], "reduction=none"));
  if (m.name == "edit_distance") {  // per-row distances (a cat state); a sum
    out.push_back(WithArg(out[0], "reduction=none"));
    out.push_back(WithArg(out[0], "substitution_cost=2, reduction=sum"));
  }
  if (m.name == "fleiss_kappa") out.push_back("fleiss_kappa(mode=probs)");
  if (m.name == "bleu_score") out.push_back(WithArg(out[0], "n_gram=2, smooth=true, weights=[0.3, 0.7]"));
  if (m.name == "rouge_score") out.push_back(WithArg(out[0], "rouge_keys=('rougeL', 'rouge3'), accumulate=avg"));
  if (m.name == "chrf_score") out.push_back(WithArg(out[0], "n_char_order=3, n_word_order=1, beta=1.0"));
  if (m.name == "translation_edit_rate") out.push_back(WithArg(out[0], "return_sentence_level_score=true"));
  if (m.name == "signal_noise_ratio") out.push_back(WithArg(out[0], "zero_mean=true"));
  if (m.name == "permutation_invariant_training") {  // the aggregated inner metric; min with an inner argument
    out.push_back(
        "permutation_invariant_training(metric=source_aggregated_signal_distortion_ratio, mode=permutation-wise)");
    out.push_back("permutation_invariant_training(metric=signal_noise_ratio, eval_func=min, zero_mean=true)");
    out.push_back("permutation_invariant_training(metric=signal_distortion_ratio, filter_length=4, load_diag=0.01)");
  }
  if (m.name == "kendall_rank_corrcoef") {  // a tuple result; tau_c's distinct counts
    out.push_back(WithArg(out[0], "t_test=true"));
    out.push_back(WithArg(out[0], "variant=c"));
  }
  if (m.name == "retrieval_precision_recall_curve") {  // a fixed K (no host read); adaptive_k, median
    out.push_back(WithArg(out[0], "max_k=3"));
    out.push_back(WithArg(out[0], "max_k=4, adaptive_k=true, aggregation=median, empty_target_action=pos"));
  }
  if (m.name == "binary_fairness") {  // a tuple of tuples, or one tuple; demographic parity's zero target
    out.push_back(WithArg(out[0], "task=demographic_parity"));
    out.push_back(WithArg(out[0], "task=equal_opportunity, ignore_index=0"));
  }
  if (m.name == "retrieval_recall_at_fixed_precision") out.push_back(WithArg(out[0], "max_k=3, adaptive_k=true"));
  // exact16: per-code counts instead of cat states.
  if (m.domain == "curves" && (absl::EndsWith(m.name, "_auroc") || absl::EndsWith(m.name, "_average_precision") ||
                               absl::EndsWith(m.name, "_roc") || absl::EndsWith(m.name, "_precision_recall_curve"))) {
    out.push_back(WithArg(out[0], "thresholds=exact16"));
  }
  if (m.name == "mean_average_precision") {  // per-class values; micro matching beside per-class matching
    out.push_back(WithArg(out[0], "class_metrics=true"));
    out.push_back(WithArg(out[0], "class_metrics=true, average=micro, box_format=cxcywh"));
    out.push_back(WithArg(out[0], "score_bins=8, num_classes=3, class_metrics=true"));  // fixed-size counts
    // A bin per float16 code (a scatter state of 15,361 bins a threshold).
    out.push_back(WithArg(out[0], "score_bins=exact_fp16, num_classes=3, iou_thresholds=[0.5, 0.75]"));
  }
  if (m.domain == "detection" && m.inputs[0] == "preds" && m.name != "panoptic_quality") {  // a matrix; a threshold
    out.push_back(WithArg(out[0], "aggregate=false"));
    out.push_back(WithArg(out[0], "iou_threshold=0.3, replacement_val=-1"));
  }
  if (m.name == "panoptic_quality") {  // [3] and [C, 3] results; unknown categories made void
    out.push_back(WithArg(out[0], "return_sq_and_rq=true"));
    out.push_back(WithArg(out[0], "return_per_class=true, return_sq_and_rq=true"));
    out.push_back("panoptic_quality(things=[1], stuffs=[0], allow_unknown_preds_category=true, return_per_class=true)");
  }
  if (m.name == "binary_auroc") {  // max_fpr: the exact finalize sorts and cumsums
    out.push_back(WithArg(out[0], "max_fpr=0.3"));
    out.push_back(WithArg(out[0], "max_fpr=0.3, thresholds=5"));
  }
  return out;
}

std::vector<Form> FormsFor(const metrics::MetricInfo& m) {
  if (m.domain == "aggregation") return {{"agg"}, {"agg_w"}, {"agg_nan"}};
  if (m.domain == "retrieval") return {{"ret"}, {"ret_bad"}};
  // The group fairness metrics: `groups` ids in [0, 3) (SpecFor's
  // num_groups); demographic parity reads no target.
  if (m.domain == "fairness") {
    if (std::find(m.inputs.begin(), m.inputs.end(), "target") == m.inputs.end()) return {{"grp_dp"}};
    return {{"grp"}, {"grp_bad"}};
  }
  // A task wrapper builds the task metric's program: one form per task (and
  // the bad labels of one) suffice; the task metrics run every form.
  if (m.domain == "task_wrapper") return {{"bin_p"}, {"mc_f"}, {"mc_bad"}, {"ml_f"}};
  if (m.name == "kl_divergence" || m.name == "jensen_shannon_divergence") return {{"prob"}};
  if (m.name == "continuous_ranked_probability_score") return {{"ens"}};
  if (m.domain == "clustering" && m.inputs[0] == "data") return {{"pts"}, {"pts_bad"}};
  if (m.domain == "clustering") return {{"mc_i"}, {"clu_bad"}};
  if (m.name == "fleiss_kappa") return {{"fk"}, {"fk_p"}};
  if (m.domain == "nominal") return {{"mc_i"}, {"mc_f"}, {"nom_nan"}, {"clu_bad"}};
  if (m.name == "perplexity") return {{"lm"}, {"lm_bad"}};
  if (absl::StrContains(m.name, "bleu") || m.name == "rouge_score" || m.name == "translation_edit_rate") {
    return {{"tok"}, {"tok3"}};
  }
  if (m.name == "chrf_score") return {{"chrf"}};
  if (m.domain == "text") return {{"tok"}};
  if (m.name == "complex_scale_invariant_signal_noise_ratio") return {{"wav4"}};
  if (m.domain == "audio") return {{"wav3"}};
  if (m.domain == "regression") return {{"reg1"}, {"reg2"}};
  if (m.domain == "segmentation") return {{"seg"}, {"seg_bad"}};
  if (m.name == "total_variation") return {{"img"}};
  if (m.name == "frechet_inception_distance") return {{"fid"}, {"fid_mixed"}};
  if (m.domain == "image") return {{"img2"}};
  if (m.name == "mean_average_precision") return {{"det"}, {"det_crowd"}};
  if (m.name == "panoptic_quality") return {{"pan"}, {"pan_bad"}};
  if (m.domain == "detection") return {{"box"}};
  if (absl::StartsWith(m.name, "binary_")) return {{"bin_f"}, {"bin_p"}, {"bin_h"}, {"bin_i"}, {"bin_bad"}};
  if (absl::StartsWith(m.name, "multiclass_")) return {{"mc_f"}, {"mc_i"}, {"mc_bad"}};
  return {{"ml_f"}, {"ml_p"}, {"ml_bad"}};
}

NamedTensors MakeBatch(const Form& form, int64_t n, at::Generator& gen) {
  const int64_t c = form.classes;
  auto f = at::TensorOptions().dtype(at::kFloat);
  auto l = at::TensorOptions().dtype(at::kLong);
  const std::string& k = form.name;
  auto labels = [&](int64_t hi, std::vector<int64_t> shape) { return at::randint(0, hi, shape, gen, l); };
  // Some rows (about one in five) get a value the metric must count.
  auto spoil = [&](at::Tensor t, double bad) {
    at::Tensor mask = at::rand(t.sizes(), gen, f) < 0.2;
    return at::where(mask, at::full({}, bad, t.options()), t);
  };
  if (k == "agg") return {{"value", at::randn({n}, gen, f) * 3 + 1e4}};
  if (k == "agg_w") return {{"value", at::randn({n}, gen, f)}, {"weight", at::rand({n}, gen, f)}};
  if (k == "agg_nan") return {{"value", spoil(at::randn({n}, gen, f), NAN)}};
  if (k == "ret" || k == "ret_bad") {
    at::Tensor t = labels(2, {n});
    return {{"preds", at::rand({n}, gen, f)},
            {"target", k == "ret" ? t : spoil(t, 2)},
            {"indexes", labels(std::max<int64_t>(n / 3, 1), {n})}};
  }
  if (k == "grp" || k == "grp_bad" || k == "grp_dp") {
    at::Tensor groups = labels(c, {n});
    NamedTensors batch = {{"preds", at::rand({n}, gen, f)}};
    if (k != "grp_dp") batch.emplace_back("target", labels(2, {n}));
    batch.emplace_back("groups", k == "grp_bad" ? spoil(groups, c + 2) : groups);
    return batch;
  }
  if (k == "reg1") {
    at::Tensor t = at::randn({n}, gen, f) + 1e4;
    return {{"preds", t + at::randn({n}, gen, f) * 0.5}, {"target", t}};
  }
  if (k == "prob") return {{"preds", at::rand({n, c}, gen, f) + 0.05}, {"target", at::rand({n, c}, gen, f) + 0.05}};
  // An ensemble of 4 members around each observation, far from zero.
  if (k == "ens") {
    at::Tensor t = at::randn({n}, gen, f) + 1e3;
    return {{"preds", t.unsqueeze(1) + at::randn({n, 4}, gen, f)}, {"target", t}};
  }
  if (k == "reg2") return {{"preds", at::randn({n, 3}, gen, f)}, {"target", at::randn({n, 3}, gen, f)}};
  if (k == "bin_f") return {{"preds", at::randn({n}, gen, f) * 2}, {"target", labels(2, {n})}};
  if (k == "bin_p") return {{"preds", at::rand({n}, gen, f)}, {"target", labels(2, {n})}};
  // float16 probabilities: metrics widen them; the exact curves count codes.
  if (k == "bin_h") return {{"preds", at::rand({n}, gen, f).to(at::kHalf)}, {"target", labels(2, {n})}};
  if (k == "bin_i") return {{"preds", labels(2, {n})}, {"target", labels(2, {n})}};
  if (k == "bin_bad") return {{"preds", at::rand({n}, gen, f)}, {"target", spoil(labels(2, {n}), 2)}};
  if (k == "mc_f") return {{"preds", at::randn({n, c}, gen, f)}, {"target", labels(c, {n})}};
  if (k == "mc_i") return {{"preds", labels(c, {n})}, {"target", labels(c, {n})}};
  if (k == "mc_bad") return {{"preds", at::randn({n, c}, gen, f)}, {"target", spoil(labels(c, {n}), c + 2)}};
  // Cluster or nominal labels, some out of range; float labels with NaN.
  if (k == "clu_bad") return {{"preds", labels(c, {n})}, {"target", spoil(labels(c, {n}), c + 2)}};
  if (k == "nom_nan") {
    return {{"preds", spoil(labels(c, {n}).to(at::kFloat), NAN)},
            {"target", spoil(labels(c, {n}).to(at::kFloat), NAN)}};
  }
  // Points [N, 3] near 3 centres far from zero, and their cluster ids (some
  // outside [0, 3) in the bad form).
  if (k == "pts" || k == "pts_bad") {
    at::Tensor ids = labels(c, {n});
    at::Tensor data = ids.to(at::kFloat).unsqueeze(1) * 4 + at::randn({n, 3}, gen, f) + 1e3;
    return {{"data", data}, {"labels", k == "pts" ? ids : spoil(ids, c + 1)}};
  }
  // Fleiss' kappa: per-category counts of 4 raters, or raters' scores.
  if (k == "fk") return {{"ratings", at::one_hot(labels(c, {n, 4}), c).sum(1)}};
  if (k == "fk_p") return {{"ratings", at::rand({n, c, c}, gen, f)}};
  // Token ids of two widths, -1 (padding) anywhere in a row.
  if (k == "tok") return {{"preds", labels(6, {n, 7}) - 1}, {"target", (labels(6, {n, 5}) - 1).to(at::kInt)}};
  // Two references a row (BLEU), one sometimes all padding.
  if (k == "tok3") return {{"preds", labels(5, {n, 7}) - 1}, {"target", labels(5, {n, 2, 6}) - 1}};
  // chrF++: characters and words, two references a row.
  if (k == "chrf") {
    return {{"preds", labels(5, {n, 9}) - 1},
            {"target", labels(5, {n, 2, 8}) - 1},
            {"preds_words", labels(4, {n, 4}) - 1},
            {"target_words", (labels(4, {n, 2, 3}) - 1).to(at::kInt)}};
  }
  // A language model's logits [N, 3, 6] and targets, some ignored (-100);
  // some targets outside the vocabulary in the bad form.
  if (k == "lm" || k == "lm_bad") {
    at::Tensor t = spoil(labels(6, {n, 3}), -100);
    return {{"preds", at::randn({n, 3, 6}, gen, f) * 3}, {"target", k == "lm" ? t : spoil(t, 6)}};
  }
  // Two speakers' signals of 8 samples (or 4 x 2 spectrogram pairs).
  if (k == "wav3" || k == "wav4") {
    std::vector<int64_t> shape = k == "wav3" ? std::vector<int64_t>{n, 2, 8} : std::vector<int64_t>{n, 2, 4, 2};
    at::Tensor t = at::randn(shape, gen, f);
    return {{"preds", t + at::randn(shape, gen, f) * 0.5}, {"target", t}};
  }
  // One-hot masks [N, 3, 4, 4] (some values 2 in the bad form).
  if (k == "seg" || k == "seg_bad") {
    at::Tensor t = at::one_hot(labels(c, {n, 4, 4}), c).permute({0, 3, 1, 2}).contiguous();
    return {{"preds", at::one_hot(labels(c, {n, 4, 4}), c).permute({0, 3, 1, 2}).contiguous()},
            {"target", k == "seg" ? t : spoil(t, 2)}};
  }
  // Images [N, 3, 12, 12]: a target and a noisy copy (img: one input).
  if (k == "img") return {{"img", at::rand({n, 3, 12, 12}, gen, f)}};
  if (k == "img2") {
    at::Tensor t = at::rand({n, 3, 12, 12}, gen, f);
    return {{"preds", t + at::randn({n, 3, 12, 12}, gen, f) * 0.1}, {"target", t}};
  }
  // Features [N, 4] of real and generated images, in two inputs or flagged.
  if (k == "fid") {
    return {{"real_features", at::randn({n, 4}, gen, f)}, {"fake_features", at::randn({n, 4}, gen, f) + 0.5}};
  }
  if (k == "fid_mixed") return {{"features", at::randn({n, 4}, gen, f)}, {"real", labels(2, {n}).to(at::kBool)}};
  // Boxes xyxy [..., 4]: corners in [0, 40), sides in [1, 21).
  auto boxes = [&](std::vector<int64_t> shape) {
    shape.push_back(2);
    at::Tensor corner = at::rand(shape, gen, f) * 40, side = at::rand(shape, gen, f) * 20 + 1;
    return at::cat({corner, corner + side}, -1);
  };
  // Detection images: 5 detection and 3 ground-truth slots an image,
  // labels in [0, 3) with about one slot in five padding (-1); det_crowd
  // adds crowds and given areas.
  if (k == "det" || k == "det_crowd") {
    NamedTensors out = {{"boxes", boxes({n, 5})},
                        {"scores", at::rand({n, 5}, gen, f)},
                        {"labels", spoil(labels(c, {n, 5}), -1)},
                        {"target_boxes", boxes({n, 3})},
                        {"target_labels", spoil(labels(c, {n, 3}), -1)}};
    if (k == "det_crowd") {
      out.emplace_back("target_iscrowd", spoil(labels(1, {n, 3}), 1));
      out.emplace_back("target_area", at::rand({n, 3}, gen, f) * 400);
    }
    return out;
  }
  // Panoptic images [N, 4, 6, 2] of (category, instance) points: categories
  // in [0, 3) in 2x2 tiles, instances in [0, 2); the prediction redraws one
  // point in four. pan_bad's predictions hold category 5 here and there
  // (in neither things nor stuffs).
  if (k == "pan" || k == "pan_bad") {
    auto image = [&] {
      at::Tensor cat = labels(c, {n, 2, 3, 1}).repeat_interleave(2, 1).repeat_interleave(2, 2);
      return at::cat({cat, labels(2, {n, 4, 6, 1})}, 3);
    };
    at::Tensor t = image();
    at::Tensor p = at::where(at::rand({n, 4, 6, 1}, gen, f) < 0.25, image(), t);
    if (k == "pan_bad") p.select(3, 0).copy_(spoil(p.select(3, 0), 5));
    return {{"preds", p}, {"target", t}};
  }
  // Box pairs [N, 4]: a target and a shifted copy.
  if (k == "box") {
    at::Tensor t = boxes({n});
    return {{"preds", t + at::randn({n, 4}, gen, f) * 3}, {"target", t}};
  }
  if (k == "ml_f") return {{"preds", at::randn({n, c}, gen, f) * 2}, {"target", labels(2, {n, c})}};
  if (k == "ml_p") return {{"preds", at::rand({n, c}, gen, f)}, {"target", labels(2, {n, c})}};
  if (k == "ml_bad") return {{"preds", at::rand({n, c}, gen, f)}, {"target", spoil(labels(2, {n, c}), 3)}};
  ADD_FAILURE() << "unknown form " << k;
  return {};
}

namespace {

// EntriesFor builds `specs` for the signature of a batch of `form`.
absl::StatusOr<std::vector<dsl::CollectionEntry>> EntriesFor(const std::vector<std::string>& specs, const Form& form,
                                                             const ir::Device& device) {
  at::Generator gen = at::detail::createCPUGenerator(1);
  auto sig = tally::SignatureOf(MakeBatch(form, 4, gen));
  if (!sig.ok()) return sig.status();
  return tally::BuildEntries(specs, *sig, device);
}

}  // namespace

absl::StatusOr<Compiled> CompileModuleFor(const std::vector<std::string>& specs, const Form& form,
                                          const CompileOptions& options) {
  auto entries = EntriesFor(specs, form, options.device);
  if (!entries.ok()) return entries.status();
  return CompileModule(*entries, options);
}

std::map<std::string, std::vector<std::string>> SpecsByForm() {
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& m : metrics::AllMetrics()) {
    for (const std::string& spec : SpecsFor(m)) {
      for (const Form& form : FormsFor(m)) {
        if (CompileModuleFor({spec}, form, CompileOptions{}).ok()) out[form.name].push_back(spec);
      }
    }
  }
  return out;
}

absl::StatusOr<std::unique_ptr<Program>> CompileFor(const std::vector<std::string>& specs, const Form& form,
                                                    const CompileOptions& options) {
  auto entries = EntriesFor(specs, form, options.device);
  if (!entries.ok()) return entries.status();
  return Compile(*entries, options);
}

::testing::AssertionResult Close(const at::Tensor& a, const at::Tensor& b, double rel) {
  if (a.defined() != b.defined()) return ::testing::AssertionFailure() << "one tensor is undefined";
  if (!a.defined()) return ::testing::AssertionSuccess();
  if (a.scalar_type() != b.scalar_type() || a.sizes() != b.sizes() || a.device() != b.device()) {
    return ::testing::AssertionFailure() << c10::toString(a.scalar_type()) << a.sizes() << "@" << a.device() << " vs "
                                         << c10::toString(b.scalar_type()) << b.sizes() << "@" << b.device();
  }
  if (a.is_meta()) return ::testing::AssertionSuccess();
  if (!at::isFloatingType(a.scalar_type())) {
    if (at::equal(a, b)) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "integers differ:\n" << a << "\nvs\n" << b;
  }
  at::Tensor x = a.to(at::kDouble).reshape({-1}), y = b.to(at::kDouble).reshape({-1});
  const double* px = x.data_ptr<double>();
  const double* py = y.data_ptr<double>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    double u = px[i], v = py[i];
    if (std::isnan(u) || std::isnan(v)) {
      if (std::isnan(u) && std::isnan(v)) continue;
    } else if (std::isinf(u) || std::isinf(v)) {
      if (u == v) continue;
    } else if (std::abs(u - v) <= rel * std::max(std::abs(u), std::abs(v))) {
      continue;
    }
    return ::testing::AssertionFailure() << "element " << i << ": " << u << " vs " << v << " (rel " << rel << ")";
  }
  return ::testing::AssertionSuccess();
}

}  // namespace tally::testing
