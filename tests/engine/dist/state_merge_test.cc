// State files merge like ranks sync, over the whole registry
// (api/state_files.h): for every input form, the collection of every spec
// that compiles for it runs over k random contiguous shards of random rows
// (k from 1 to 5, empty shards included), each shard in its own program
// saved as a state file; MergeStates of the files in a random order, and a
// merge of two partial merges (associativity), equal one program fed every
// shard in row order: the same Compute status, integers exactly, floats
// within 1e-9 relative (1e-5 for float32 results). `cat` states come out
// in another order than the one program's, so this also checks that no
// metric depends on the order of its rows — except results that are one
// value per row (kl_divergence(reduction=none), TER's sentence scores):
// those list the rows in the order of the sources, and equal one program
// fed the shards in that order.
//
// The one program sees the same batches as the shards: a few TorchMetrics
// semantics depend on batching (docs: sync_invariance_test.cc).
#include <ATen/ATen.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "api/evaluate.h"
#include "api/state_files.h"
#include "engine/persist/checkpoint_format.h"
#include "engine/persist/state_file.h"
#include "gtest/gtest.h"
#include "metrics/registry.h"
#include "tests/engine/dist/dist_testing.h"
#include "tests/testlib/random_inputs.h"

namespace tally {
namespace {

using ::tally::testing::Form;

constexpr double kRel = 1e-9;
constexpr int64_t kBatch = 5;

const char* const kForms[] = {"agg",       "agg_w",   "ret",       "reg1",   "reg2",    "prob",    "bin_f",   "bin_p",
                              "bin_i",     "mc_f",    "mc_i",      "ml_f",   "ml_p",    "agg_nan", "ret_bad", "bin_bad",
                              "mc_bad",    "ml_bad",  "grp",       "grp_dp", "grp_bad", "nom_nan", "fk",      "fk_p",
                              "clu_bad",   "pts_bad", "pts",       "ens",    "tok",     "tok3",    "chrf",    "lm",
                              "lm_bad",    "wav3",    "wav4",      "seg",    "seg_bad", "img",     "img2",    "fid",
                              "fid_mixed", "det",     "det_crowd", "box",    "pan",     "pan_bad"};

NamedTensors Rows(const NamedTensors& in, int64_t begin, int64_t end) {
  NamedTensors out;
  for (const auto& [k, t] : in) out.emplace_back(k, t.dim() == 0 ? t : t.narrow(0, begin, end - begin));
  return out;
}

// Result is what a program computes.
struct Result {
  absl::Status status;
  NamedTensors values;
};

Result ComputeOf(const Program& p) {
  auto v = p.Compute();
  return {v.status(), v.ok() ? *v : NamedTensors{}};
}

// Without drops the results of the metrics labelled `labels`.
NamedTensors Without(const NamedTensors& values, const std::vector<std::string>& labels) {
  NamedTensors out;
  for (const auto& [name, t] : values) {
    bool drop = false;
    for (const std::string& l : labels) drop |= name == l || name.rfind(l + "/", 0) == 0;
    if (!drop) out.emplace_back(name, t);
  }
  return out;
}

// Differs describes how `got` differs from `want` ("" when it does not),
// leaving out the metrics labelled `skip`.
std::string Differs(const Result& got, const Result& want, const std::vector<std::string>& skip = {}) {
  if (got.status != want.status) {
    return absl::StrCat("compute status ", got.status.ToString(), ", expected ", want.status.ToString());
  }
  return got.status.ok() ? testing::CompareResults(Without(got.values, skip), Without(want.values, skip), kRel) : "";
}

// RowOrdered holds for a metric whose result is (or holds) one value per
// row.
bool RowOrdered(const std::string& spec) {
  return absl::StrContains(spec, "reduction=none") || absl::StrContains(spec, "return_sentence_level_score=true") ||
         absl::StrContains(spec, "aggregate=false");
}

absl::StatusOr<Result> MergedResult(const std::vector<StateSource>& sources) {
  auto merged = MergeStates(sources);
  if (!merged.ok()) return merged.status();
  return ComputeOf(*merged->program);
}

// RunCase checks one collection over one data set with `trials` random
// shardings.
void RunCase(const std::string& name, const std::vector<std::string>& specs, const Form& form, const NamedTensors& data,
             std::mt19937& rng, int trials) {
  auto compiled = testing::CompileFor(specs, form, CompileOptions{});
  ASSERT_TRUE(compiled.ok()) << name << ": " << compiled.status();
  const NamedTensors used = testing::Used(**compiled, data);
  const int64_t rows = testing::Rows(used);
  for (int trial = 0; trial < trials; ++trial) {
    const int k = std::uniform_int_distribution<int>(1, 5)(rng);
    std::vector<int64_t> cuts = {0, rows};
    for (int i = 1; i < k; ++i) cuts.push_back(std::uniform_int_distribution<int64_t>(0, rows)(rng));
    std::sort(cuts.begin(), cuts.end());
    const std::string what = absl::StrCat(name, ", ", k, " shards, trial ", trial);

    std::vector<StateSource> files;
    for (int s = 0; s < k; ++s) {
      // Each shard is its own evaluation, as `tally eval --save-state` runs it.
      auto shard = PrepareEval(specs, Rows(used, cuts[s], cuts[s + 1]), EvalOptions{});
      ASSERT_TRUE(shard.ok()) << what << ": shard " << s << ": " << shard.status();
      ASSERT_TRUE(FeedRows(*shard->program, shard->used, 0, shard->rows, kBatch).ok()) << what;
      auto bytes = SaveState(*shard);
      ASSERT_TRUE(bytes.ok()) << what << ": " << bytes.status();
      files.push_back({absl::StrCat(s), *std::move(bytes)});
    }
    std::shuffle(files.begin(), files.end(), rng);
    // One program fed the shards in row order, and one in the files' order.
    Result want, want_in_file_order;
    std::vector<std::string> row_ordered;
    for (bool file_order : {false, true}) {
      auto one = PrepareEval(specs, used, EvalOptions{});
      ASSERT_TRUE(one.ok()) << what << ": " << one.status();
      for (int i = 0; i < k; ++i) {
        const int s = file_order ? std::stoi(files[i].name) : i;
        ASSERT_TRUE(FeedRows(*one->program, one->used, cuts[s], cuts[s + 1], kBatch).ok()) << what;
      }
      (file_order ? want_in_file_order : want) = ComputeOf(*one->program);
      for (size_t e = 0; e < specs.size() && !file_order; ++e) {
        if (RowOrdered(specs[e])) row_ordered.push_back(one->entries[e].label);
      }
    }

    auto got = MergedResult(files);
    ASSERT_TRUE(got.ok()) << what << ": " << got.status();
    EXPECT_EQ(Differs(*got, want_in_file_order), "") << what << ": merged in random order";
    EXPECT_EQ(Differs(*got, want, row_ordered), "") << what << ": merged in random order, against row order";

    // (first half) + (second half), each merged and saved first.
    const size_t half = files.size() / 2;
    std::vector<StateSource> partial;
    for (auto [begin, end] : {std::pair<size_t, size_t>{0, half}, {half, files.size()}}) {
      if (begin == end) continue;
      auto merged = MergeStates(std::vector<StateSource>(files.begin() + begin, files.begin() + end));
      ASSERT_TRUE(merged.ok()) << what << ": " << merged.status();
      auto bytes = SaveState(*merged);
      ASSERT_TRUE(bytes.ok()) << what << ": " << bytes.status();
      partial.push_back({absl::StrCat("part", begin), *std::move(bytes)});
    }
    auto nested = MergedResult(partial);
    ASSERT_TRUE(nested.ok()) << what << ": " << nested.status();
    EXPECT_EQ(Differs(*nested, want_in_file_order), "") << what << ": merge of merges";
  }
}

// One test per input form, each with its own seeds, so that Bazel's shards
// (BUILD: shard_count) split them without changing their data.
class StateMerge : public ::testing::TestWithParam<const char*> {};

TEST_P(StateMerge, ShardsMergeLikeOneProgram) {
  // Verifies the invariance at the top of this file for the form's
  // collection over 37 random rows and over 2 rows (most shards empty).
  const std::string f = GetParam();
  auto by_form = testing::SpecsByForm();
  const std::vector<std::string>& specs = by_form[f];
  ASSERT_FALSE(specs.empty()) << f;
  uint64_t seed = 0;
  for (char c : f) seed = seed * 31 + static_cast<unsigned char>(c);
  seed %= 1000003;
  at::Generator gen = at::detail::createCPUGenerator(20261126 + seed);
  std::mt19937 rng(7 + seed);
  Form form{f};
  RunCase(absl::StrCat(f, "/37_rows"), specs, form, testing::MakeBatch(form, 37, gen), rng, 3);
  RunCase(absl::StrCat(f, "/2_rows"), specs, form, testing::MakeBatch(form, 2, gen), rng, 1);
}

INSTANTIATE_TEST_SUITE_P(EveryForm, StateMerge, ::testing::ValuesIn(kForms),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

TEST(StateMergeCoverage, EverySpecOfTheRegistryHasAForm) {
  // Every spec of every registered metric runs in one of the forms above.
  auto by_form = testing::SpecsByForm();
  size_t specs_run = 0;
  for (const char* f : kForms) specs_run += by_form[f].size();
  for (const auto& m : metrics::AllMetrics()) {
    for (const std::string& spec : testing::SpecsFor(m)) {
      bool found = false;
      for (const char* f : kForms) {
        const auto& specs = by_form[f];
        found |= std::find(specs.begin(), specs.end(), spec) != specs.end();
      }
      EXPECT_TRUE(found) << spec;
    }
  }
  EXPECT_GT(specs_run, metrics::AllMetrics().size());
}

// Two files of one small collection, for the refusal tests.
class StateFileRefusals : public ::testing::Test {
 protected:
  static std::string Save(const std::vector<std::string>& specs, const NamedTensors& inputs) {
    auto p = PrepareEval(specs, inputs, EvalOptions{});
    EXPECT_TRUE(p.ok()) << p.status();
    EXPECT_TRUE(FeedRows(*p->program, p->used, 0, p->rows, 0).ok());
    auto bytes = SaveState(*p);
    EXPECT_TRUE(bytes.ok()) << bytes.status();
    return bytes.ok() ? *bytes : "";
  }
  NamedTensors Inputs(int64_t n, int64_t classes = 4) {
    at::Generator gen = at::detail::createCPUGenerator(n);
    return {{"preds", at::rand({n, classes}, gen, at::kFloat)},
            {"target", at::randint(0, classes, {n}, gen, at::kLong)}};
  }
  const std::vector<std::string> specs_ = {"multiclass_accuracy(num_classes=4)", "multiclass_auroc(num_classes=4)"};
};

TEST_F(StateFileRefusals, EveryFlippedByteAndTruncationIsNamed) {
  // Verifies that every single-byte change and every truncation of a state
  // file is refused with an error naming the file, never merged.
  const std::string good = Save(specs_, Inputs(6));
  ASSERT_TRUE(MergeStates({{"good", good}}).ok());
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] = static_cast<char>(bad[i] ^ 0x20);
    auto merged = MergeStates({{"good", good}, {"flipped", bad}});
    ASSERT_FALSE(merged.ok()) << "byte " << i;
    EXPECT_EQ(merged.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(merged.status().message().find("state file flipped: "), std::string::npos) << merged.status();
  }
  for (size_t n = 0; n < good.size(); n += 7) {
    auto merged = MergeStates({{"cut", good.substr(0, n)}});
    ASSERT_FALSE(merged.ok()) << n;
    EXPECT_NE(merged.status().message().find("state file cut: "), std::string::npos) << merged.status();
  }
}

TEST_F(StateFileRefusals, ForeignFilesAreNamed) {
  // Verifies that files of other metrics, other inputs, another state layout
  // and a checkpoint are refused with one line naming the file.
  const std::string a = Save(specs_, Inputs(6));
  auto refuse = [&](const std::string& bytes, const std::string& want) {
    auto merged = MergeStates({{"a.st", a}, {"b.st", bytes}});
    ASSERT_FALSE(merged.ok());
    EXPECT_NE(merged.status().message().find(want), std::string::npos) << merged.status();
    EXPECT_EQ(merged.status().message().find('\n'), std::string::npos) << merged.status();
  };
  refuse(Save({"multiclass_accuracy(num_classes=4)"}, Inputs(5)), "state file b.st: holds other metrics");
  refuse(Save(specs_, {{"preds", at::rand({3, 4}, at::kDouble)}, {"target", at::randint(0, 4, {3}, at::kLong)}}),
         "state file b.st: was saved for other inputs (preds f64[N,4], target i64[N]) than a.st (preds f32[N,4]");
  // Another state layout: the same specs and inputs, a layout hash of another build.
  auto file = persist::DecodeStateFile(a, "a.st");
  ASSERT_TRUE(file.ok()) << file.status();
  file->layout_hash = "0000000000000000";
  refuse(persist::EncodeStateFile(*file), "state file b.st: its states are laid out differently");
  refuse(persist::Frame("x"), "state file b.st: a Tally checkpoint, not a state file");
  refuse("", "state file b.st: not a Tally state file");
}

TEST_F(StateFileRefusals, ShardsOfOtherRowCountsMerge) {
  // Verifies that shards differing only in rows (0, 1 and 9) merge, and
  // equal one evaluation over all of them.
  NamedTensors all = Inputs(10);
  std::vector<StateSource> files = {{"0", Save(specs_, Rows(all, 0, 0))},
                                    {"1", Save(specs_, Rows(all, 0, 1))},
                                    {"9", Save(specs_, Rows(all, 1, 10))}};
  auto merged = MergedResult(files);
  ASSERT_TRUE(merged.ok()) << merged.status();
  auto one = PrepareEval(specs_, all, EvalOptions{});
  ASSERT_TRUE(one.ok());
  ASSERT_TRUE(FeedRows(*one->program, one->used, 0, 10, 0).ok());
  EXPECT_EQ(Differs(*merged, ComputeOf(*one->program)), "");
}

TEST_F(StateFileRefusals, AShardMergedTwiceIsRefusedNamingBothSources) {
  // Verifies that a merge refuses a source holding a shard an earlier source
  // brought (the same file twice; a merged file and one of its parts),
  // naming both, while two saves of the same rows are two shards and merge.
  NamedTensors all = Inputs(8);
  const std::string a = Save(specs_, Rows(all, 0, 4)), b = Save(specs_, Rows(all, 4, 8));
  auto refused = [](const std::vector<StateSource>& sources, const std::string& want) {
    auto merged = MergeStates(sources);
    ASSERT_FALSE(merged.ok());
    EXPECT_EQ(merged.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(merged.status().message().find(want), std::string::npos) << merged.status();
  };
  refused({{"a.st", a}, {"b.st", b}, {"a2.st", a}}, "state file a2.st: holds shard ");
  refused({{"a.st", a}, {"a2.st", a}}, "which a.st already brought: its rows would count twice");
  auto ab = MergeStates({{"a.st", a}, {"b.st", b}});
  ASSERT_TRUE(ab.ok()) << ab.status();
  EXPECT_EQ(ab->ids.size(), 2u);
  auto ab_file = SaveState(*ab);
  ASSERT_TRUE(ab_file.ok()) << ab_file.status();
  refused({{"ab.st", *ab_file}, {"b.st", b}}, "state file b.st: holds shard ");
  refused({{"b.st", b}, {"ab.st", *ab_file}}, "which b.st already brought");
  // The same rows saved twice are two shards: they merge (rows twice, as asked).
  EXPECT_TRUE(MergeStates({{"a.st", a}, {"again.st", Save(specs_, Rows(all, 0, 4))}}).ok());
}

TEST_F(StateFileRefusals, AFileOverTheReadCapIsRefusedUnread) {
  // Verifies that ReadStateSource refuses a file larger than its cap with
  // ResourceExhausted naming it, and reads one that fits.
  const std::string a = Save(specs_, Inputs(6));
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string path = absl::StrCat(dir != nullptr ? dir : "/tmp", "/capped.st");
  std::ofstream(path, std::ios::binary | std::ios::trunc) << a;
  auto over = ReadStateSource(path, static_cast<int64_t>(a.size()) - 1);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(over.status().message().find(path), std::string::npos) << over.status();
  auto fits = ReadStateSource(path, static_cast<int64_t>(a.size()));
  ASSERT_TRUE(fits.ok()) << fits.status();
  EXPECT_EQ(fits->bytes, a);
}

}  // namespace
}  // namespace tally
