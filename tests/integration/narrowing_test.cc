// Tests of state narrowing end to end: every metric that reads a multiclass
// confusion matrix only through its marginals gives bit-identical results
// whether the compiler narrowed the matrix (the metric alone) or kept it
// (the same metric beside multiclass_confusion_matrix, which reads it
// whole), over every average, ignore_index, top_k, label and score preds,
// extra dims, and class counts up to C = 131,072 at small N; and a program
// over the state budget fails at compile time, naming the argument, before
// anything is allocated.
#include <ATen/ATen.h>
#include <sys/resource.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "api/tally.h"
#include "engine/runtime/compiler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testlib/status_matchers.h"

namespace tally {
namespace {

using ::tally::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

// Inputs are random labels over `c` classes (about half right), as integer
// preds or as scores whose argmax is that label; `extra` adds a trailing
// position dim ((N, C, K) scores, (N, K) labels).
NamedTensors Inputs(int64_t n, int64_t c, bool scores, int64_t extra, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  std::vector<int64_t> shape{n};
  if (extra > 0) shape.push_back(extra);
  at::Tensor target = at::randint(0, c, shape, gen, at::kLong);
  at::Tensor wrong = at::randint(0, c, shape, gen, at::kLong);
  at::Tensor label = at::where(at::rand(shape, gen, at::kFloat) < 0.5, target, wrong);
  if (!scores) return {{"preds", label}, {"target", target}};
  // Scores: noise in [0, 1), plus 2 at the label (so argmax is the label).
  std::vector<int64_t> sshape{n, c};
  if (extra > 0) sshape.push_back(extra);
  at::Tensor s = at::rand(sshape, gen, at::kFloat);
  s.scatter_add_(1, label.unsqueeze(1), at::full(label.unsqueeze(1).sizes(), 2.0f, at::kFloat));
  return {{"preds", s}, {"target", target}};
}

std::vector<at::Tensor> Values(const std::vector<std::string>& specs, const NamedTensors& in, int64_t batch) {
  tally::EvalOptions o;
  o.batch_size = batch;
  auto r = tally::Evaluate(specs, in, o);
  EXPECT_TRUE(r.ok()) << r.status();
  std::vector<at::Tensor> out;
  if (r.ok()) {
    for (const auto& e : *r) out.push_back(e.value);
  }
  return out;
}

// FixedStateBytes compiles `specs` for `in` and returns its fixed-size state bytes.
int64_t FixedStateBytes(const std::vector<std::string>& specs, const NamedTensors& in) {
  auto sig = tally::SignatureOf(in);
  auto entries = tally::BuildEntries(specs, *sig, ir::Device{});
  EXPECT_TRUE(entries.ok()) << entries.status();
  auto c = CompileModule(*entries, CompileOptions{});
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? c->module->FixedStateBytes() : -1;
}

std::vector<std::string> Specs(int64_t c, bool scores) {
  std::string k = absl::StrCat("num_classes=", c);
  std::vector<std::string> out;
  for (const char* m :
       {"accuracy", "precision", "recall", "f1_score", "specificity", "hamming_distance", "jaccard_index"}) {
    for (const char* avg : {"micro", "macro", "weighted", "none"}) {
      out.push_back(absl::StrCat("multiclass_", m, "(", k, ", average=", avg, ")"));
    }
  }
  out.push_back(absl::StrCat("multiclass_fbeta_score(", k, ", beta=0.5, average=macro)"));
  out.push_back(absl::StrCat("multiclass_stat_scores(", k, ", average=none)"));
  out.push_back(absl::StrCat("multiclass_stat_scores(", k, ", average=weighted)"));
  out.push_back(absl::StrCat("multiclass_matthews_corrcoef(", k, ")"));
  for (const char* w : {"none", "linear", "quadratic"}) {
    out.push_back(absl::StrCat("multiclass_cohen_kappa(", k, ", weights=", w, ")"));
  }
  out.push_back(absl::StrCat("multiclass_precision(", k, ", average=macro, ignore_index=1)"));
  out.push_back(absl::StrCat("multiclass_recall(", k, ", average=weighted, ignore_index=0)"));
  out.push_back(absl::StrCat("multiclass_matthews_corrcoef(", k, ", ignore_index=0)"));
  out.push_back(absl::StrCat("multiclass_jaccard_index(", k, ", average=macro, ignore_index=1)"));
  if (scores && c > 2) out.push_back(absl::StrCat("multiclass_accuracy(", k, ", top_k=2)"));
  return out;
}

struct Case {
  int64_t classes;
  bool scores;
  int64_t extra;
};

class NarrowingTest : public ::testing::TestWithParam<Case> {};

TEST_P(NarrowingTest, NarrowedEqualsMatrixBitForBit) {
  // Verifies that each metric alone (narrowed: no C x C state) gives exactly
  // the values it gives beside the confusion matrix (which keeps the matrix
  // and reads the marginals off it), in one update and in batches of 7.
  const Case& c = GetParam();
  NamedTensors in = Inputs(97, c.classes, c.scores, c.extra, 5 + c.classes);
  const std::string matrix = absl::StrCat("multiclass_confusion_matrix(num_classes=", c.classes, ")");
  for (const std::string& spec : Specs(c.classes, c.scores)) {
    // Only the confusion matrix itself is C^2; a narrowed metric costs O(C).
    EXPECT_LE(FixedStateBytes({spec}, in), 8 * (5 * c.classes + 2)) << spec;
    // Micro scores (but stat_scores) keep scalars: the totals of 3 parts.
    if (spec.find("average=micro") != std::string::npos && spec.find("stat_scores") == std::string::npos &&
        spec.find("jaccard") == std::string::npos) {
      EXPECT_LE(FixedStateBytes({spec}, in), 8 * (3 + 2)) << spec;
    }
    for (int64_t batch : {int64_t{0}, int64_t{7}}) {
      std::vector<at::Tensor> narrowed = Values({spec}, in, batch);
      std::vector<at::Tensor> kept = Values({spec, matrix}, in, batch);
      ASSERT_EQ(narrowed.size(), 1u);
      ASSERT_EQ(kept.size(), 2u);
      EXPECT_TRUE(narrowed[0].equal(kept[0]) ||
                  (narrowed[0].isnan().all().item<bool>() && kept[0].isnan().all().item<bool>()))
          << spec << " batch " << batch << "\n"
          << narrowed[0] << "\nvs\n"
          << kept[0];
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Classes, NarrowingTest,
                         ::testing::Values(Case{2, false, 0}, Case{2, true, 0}, Case{3, true, 0}, Case{7, false, 0},
                                           Case{7, true, 3}, Case{5, false, 2}, Case{64, true, 0},
                                           Case{1000, false, 0}),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           return absl::StrCat("C", i.param.classes, i.param.scores ? "_scores" : "_labels",
                                               i.param.extra ? absl::StrCat("_extra", i.param.extra) : "");
                         });

TEST(Narrowing, LargeClassCountsEqualTheirDenseEquivalent) {
  // Verifies results at C = 131,072 (3 C-vectors, no 128 GiB matrix): five
  // classes spread over the whole range give exactly what the same data over
  // C = 5 gives (to the last bits of a float64 sum over more classes), for
  // the metrics whose value absent classes do not change
  // (macro averages skip them; micro, MCC and unweighted kappa sum zeros).
  const int64_t big = 131072;
  const std::vector<int64_t> spread = {0, 30011, 65536, 99991, big - 1};
  at::Tensor map = at::tensor(spread, at::kLong);
  for (bool scores : {false, true}) {
    NamedTensors small = Inputs(61, 5, false, 0, 3);
    NamedTensors large = {{"preds", map.index_select(0, small[0].second)},
                          {"target", map.index_select(0, small[1].second)}};
    if (scores) {
      at::Tensor s = at::zeros({61, big}, at::kFloat);
      s.scatter_(1, large[0].second.unsqueeze(1), 1.0f);
      large[0].second = s;
    }
    for (const char* m : {"accuracy", "precision", "recall", "f1_score", "jaccard_index"}) {
      for (const char* avg : {"micro", "macro"}) {
        std::string s5 = absl::StrCat("multiclass_", m, "(num_classes=5, average=", avg, ")");
        std::string sb = absl::StrCat("multiclass_", m, "(num_classes=", big, ", average=", avg, ")");
        std::vector<at::Tensor> a = Values({s5}, small, 0), b = Values({sb}, large, 0);
        ASSERT_EQ(a.size(), 1u);
        ASSERT_EQ(b.size(), 1u);
        // Equal up to the order of a float64 sum over 5 vs 131,072 classes.
        EXPECT_NEAR(a[0].item<double>(), b[0].item<double>(), 1e-15) << sb << (scores ? " scores" : " labels");
      }
    }
    for (const char* m : {"matthews_corrcoef", "cohen_kappa"}) {
      std::vector<at::Tensor> a = Values({absl::StrCat("multiclass_", m, "(num_classes=5)")}, small, 0);
      std::vector<at::Tensor> b = Values({absl::StrCat("multiclass_", m, "(num_classes=", big, ")")}, large, 7);
      ASSERT_EQ(a.size(), 1u);
      ASSERT_EQ(b.size(), 1u);
      EXPECT_NEAR(a[0].item<double>(), b[0].item<double>(), 1e-12) << m;
    }
    EXPECT_LE(FixedStateBytes({absl::StrCat("multiclass_f1_score(num_classes=", big, ", average=macro)")}, large),
              3 * big * 8 + 16);
  }
}

int64_t PeakRssKb() {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

TEST(StateBudget, AMatrixOverTheBudgetFailsBeforeAllocating) {
  // Verifies that a requested 131,072^2 confusion matrix (128 GiB) is one
  // ResourceExhausted line naming the metric, the argument, the bytes and
  // the budget, and that nothing of that size was allocated.
  NamedTensors in = Inputs(10, 3, false, 0, 1);
  const int64_t before = PeakRssKb();
  tally::EvalOptions o;
  auto r = tally::Evaluate({"multiclass_confusion_matrix(num_classes=131072)"}, in, o);
  EXPECT_THAT(r.status(), StatusIs(absl::StatusCode::kResourceExhausted,
                                   AllOf(HasSubstr("multiclass_confusion_matrix"), HasSubstr("num_classes=131072"),
                                         HasSubstr("137438953472 bytes"), HasSubstr("--max-state-bytes"))));
  EXPECT_EQ(std::string(r.status().message()).find('\n'), std::string::npos);
  EXPECT_LT(PeakRssKb() - before, 200 * 1024) << "KiB of peak RSS added";
}

TEST(StateBudget, AnExplicitBudgetIsHonouredEverywhere) {
  // Verifies the budget option: a 100-class matrix (80,000 bytes) passes
  // with 1 MB and fails with 50,000 bytes, in Evaluate and in Session; a
  // narrowed metric of the same C fits the small budget.
  NamedTensors in = Inputs(10, 100, false, 0, 1);
  tally::EvalOptions o;
  o.max_state_bytes = 1 << 20;
  EXPECT_TRUE(tally::Evaluate({"multiclass_confusion_matrix(num_classes=100)"}, in, o).ok());
  o.max_state_bytes = 50000;
  EXPECT_THAT(tally::Evaluate({"multiclass_confusion_matrix(num_classes=100)"}, in, o).status(),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("80000 bytes")));
  EXPECT_TRUE(tally::Evaluate({"multiclass_f1_score(num_classes=100)"}, in, o).ok());
  SessionOptions so;
  so.max_state_bytes = 50000;
  auto sig = tally::SignatureOf(in);
  auto s = tally::CreateDefaultSession({"multiclass_confusion_matrix(num_classes=100)"}, *sig, so);
  EXPECT_THAT(s.status(), StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("num_classes=100")));
  EXPECT_TRUE(tally::CreateDefaultSession({"multiclass_accuracy(num_classes=100)"}, *sig, so).ok());
}

// Binary scores and labels: rows [begin, end) of one fixed random draw.
NamedTensors BinaryRows(int64_t n, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  return {{"preds", at::rand({n}, gen, at::kFloat)}, {"target", at::randint(0, 2, {n}, gen, at::kLong)}};
}

NamedTensors Slice(const NamedTensors& in, int64_t begin, int64_t end) {
  NamedTensors out;
  for (const auto& [name, t] : in) out.emplace_back(name, t.slice(0, begin, end));
  return out;
}

int64_t StateBytes(const std::vector<at::Tensor>& states) {
  int64_t b = 0;
  for (const auto& t : states) b += t.numel() * t.element_size();
  return b;
}

TEST(StateBudget, RowsAccumulatedPastTheBudgetAreRefusedBeforeTheyAreAppended) {
  // Verifies that an exact AUROC, whose states keep every row, takes updates
  // while its states fit the budget, refuses (ResourceExhausted, one line
  // naming the metric and the budget) the update that would grow them past
  // it with every state as it was, and still takes a batch that fits.
  const std::vector<std::string> specs = {"binary_auroc", "binary_average_precision"};
  const int64_t batch = 500;
  NamedTensors all = BinaryRows(12 * batch, 16);
  // Bytes of the states after one and two batches, under the default budget.
  int64_t one = 0, per_batch = 0;
  {
    auto p = tally::PrepareEval(specs, all, {});
    ASSERT_TRUE(p.ok()) << p.status();
    ASSERT_TRUE(tally::FeedRows(*p->program, p->used, 0, batch, batch).ok());
    one = StateBytes(p->program->states());
    ASSERT_TRUE(tally::FeedRows(*p->program, p->used, batch, 2 * batch, batch).ok());
    per_batch = StateBytes(p->program->states()) - one;
  }
  ASSERT_GT(per_batch, 0);
  tally::EvalOptions o;
  // 10 batches and a half: the fixed-size states and twice the rows (room to
  // copy them while their buffer grows).
  o.max_state_bytes = (one - per_batch) + 2 * (10 * per_batch + per_batch / 2);
  auto p = tally::PrepareEval(specs, all, o);
  ASSERT_TRUE(p.ok()) << p.status();
  Program& program = *p->program;
  ASSERT_TRUE(tally::FeedRows(program, p->used, 0, 10 * batch, batch).ok());
  std::vector<at::Tensor> before;
  for (const auto& t : program.states()) before.push_back(t.clone());
  absl::Status st = tally::FeedRows(program, p->used, 10 * batch, 11 * batch, batch);
  EXPECT_THAT(st, StatusIs(absl::StatusCode::kResourceExhausted,
                           AllOf(HasSubstr("binary_auroc"), HasSubstr("this update would grow the states"),
                                 HasSubstr("over the state budget of"), HasSubstr("--max-state-bytes"))));
  EXPECT_EQ(std::string(st.message()).find('\n'), std::string::npos);
  ASSERT_EQ(program.states().size(), before.size());
  for (size_t i = 0; i < before.size(); ++i) EXPECT_TRUE(before[i].equal(program.states()[i])) << "state " << i;
  // The values are those of the 10 batches taken.
  auto values = tally::CollectResults(program, p->entries, p->specs);
  ASSERT_TRUE(values.ok()) << values.status();
  std::vector<at::Tensor> want = Values(specs, Slice(all, 0, 10 * batch), batch);
  ASSERT_EQ(values->size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_TRUE((*values)[i].value.equal(want[i])) << specs[i];
  // A smaller batch that fits is taken; through Evaluate, the same budget
  // refuses all 11 batches in one line.
  EXPECT_TRUE(tally::FeedRows(program, p->used, 10 * batch, 10 * batch + batch / 4, batch).ok());
  o.batch_size = batch;
  EXPECT_THAT(tally::Evaluate(specs, Slice(all, 0, 11 * batch), o).status(),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("this update would grow the states")));
}

TEST(StateBudget, AMergePastTheBudgetIsRefusedNamingTheSource) {
  // Verifies that MergeStates refuses the state file whose rows would grow
  // the merged states past options.max_state_bytes, naming that file, and
  // merges the same files under a budget they fit.
  const std::vector<std::string> specs = {"binary_auroc"};
  const int64_t rows = 2000;
  NamedTensors all = BinaryRows(3 * rows, 17);
  std::vector<StateSource> sources;
  int64_t one = 0;  // the state bytes of one file: the fixed-size states and `rows` rows
  for (int k = 0; k < 3; ++k) {
    auto prepared = tally::PrepareEval(specs, Slice(all, k * rows, (k + 1) * rows), {});
    ASSERT_TRUE(prepared.ok()) << prepared.status();
    ASSERT_TRUE(tally::FeedRows(*prepared->program, prepared->used, 0, rows, rows).ok());
    auto bytes = tally::SaveState(*prepared);
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    sources.push_back({absl::StrCat("shard", k, ".st"), *std::move(bytes)});
    one = StateBytes(prepared->program->states());
  }
  auto whole = tally::MergeStates(sources);
  ASSERT_TRUE(whole.ok()) << whole.status();
  const int64_t three = StateBytes(whole->program->states());
  // The budget holds the fixed-size states and twice the rows (room to copy
  // them while their buffer grows).
  const int64_t row_bytes = (three - one) / 2, fixed = one - row_bytes;
  const int64_t need = fixed + 2 * 3 * row_bytes;
  tally::EvalOptions o;
  o.max_state_bytes = need - 1;
  auto refused = tally::MergeStates(sources, o);
  EXPECT_THAT(refused.status(),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("state file shard2.st"), HasSubstr("binary_auroc"),
                             HasSubstr("this merge would grow the states"), HasSubstr("over the state budget"))));
  o.max_state_bytes = need;
  auto fits = tally::MergeStates(sources, o);
  ASSERT_TRUE(fits.ok()) << fits.status();
  auto a = tally::CollectResults(*whole->program, whole->entries, whole->specs);
  auto b = tally::CollectResults(*fits->program, fits->entries, fits->specs);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE((*a)[0].value.equal((*b)[0].value));
}

}  // namespace
}  // namespace tally
