// Tests of retrieval_precision_recall_curve and
// retrieval_recall_at_fixed_precision (metrics/retrieval/curves.cc):
// TorchMetrics 1.5.2's docstring results, hand-computed curves (adaptive_k,
// max_k larger than every query, each empty_target_action, each
// aggregation, ignore_index) in one update and in batches, max_k=None (a
// host read that inspect marks; max_k given reads nothing but the checks),
// the TorchScript backend, empty states, and argument, input and target
// errors naming the metric.
#include <ATen/ATen.h>

#include <functional>
#include <string>
#include <vector>

#include "api/tally.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace tally {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;

NamedTensors Inputs(std::vector<int64_t> idx, std::vector<float> preds, std::vector<int64_t> target) {
  return {{"preds", at::tensor(preds, at::kFloat)},
          {"target", at::tensor(target, at::kLong)},
          {"indexes", at::tensor(idx, at::kLong)}};
}

// With replaces one input.
NamedTensors With(NamedTensors in, const std::string& name, at::Tensor t) {
  for (auto& [n, v] : in)
    if (n == name) v = t;
  return in;
}

// The class docstrings' example.
NamedTensors Docstring() {
  return Inputs({0, 0, 0, 0, 1, 1, 1}, {0.4f, 0.01f, 0.5f, 0.6f, 0.2f, 0.3f, 0.5f}, {1, 0, 0, 1, 1, 0, 1});
}

// Three queries: 0 = docs (0.9 rel, 0.8, 0.7 rel), 1 = (0.6 rel), 2 has no
// positive (0.5, 0.4).
NamedTensors Three() { return Inputs({2, 0, 1, 0, 2, 0}, {0.5f, 0.8f, 0.6f, 0.9f, 0.4f, 0.7f}, {0, 0, 1, 1, 0, 1}); }

absl::StatusOr<ResultTree> Eval(const std::string& spec, const NamedTensors& in, int64_t batch = 0,
                                exec::Backend backend = exec::Backend::kEager) {
  tally::EvalOptions o;
  o.batch_size = batch;
  o.backend = backend;
  auto r = tally::Evaluate({spec}, in, o);
  if (!r.ok()) return r.status();
  return (*r)[0].result;
}

std::string Error(const std::string& spec, const NamedTensors& in) {
  auto r = Eval(spec, in);
  return r.ok() ? "ok" : std::string(r.status().message());
}

// Matches compares a result with nested JSON lists within 1e-6, shapes exactly.
::testing::AssertionResult Matches(const ResultTree& got, const json& want) {
  if (!got.is_leaf()) {
    if (!want.is_array() || want.size() != got.parts.size()) {
      return ::testing::AssertionFailure() << got.parts.size() << " parts, expected " << want.dump();
    }
    for (size_t i = 0; i < got.parts.size(); ++i) {
      auto r = Matches(got.parts[i], want[i]);
      if (!r) return ::testing::AssertionFailure() << "part " << i << ": " << r.message();
    }
    return ::testing::AssertionSuccess();
  }
  json have = json::parse(tally::ValueToJson(got.tensor));
  std::function<bool(const json&, const json&)> same = [&](const json& a, const json& b) {
    if (a.is_array() != b.is_array()) return false;
    if (a.is_array()) {
      if (a.size() != b.size()) return false;
      for (size_t i = 0; i < a.size(); ++i)
        if (!same(a[i], b[i])) return false;
      return true;
    }
    return std::abs(a.get<double>() - b.get<double>()) <= 1e-6;
  };
  if (!same(have, want)) return ::testing::AssertionFailure() << "got " << have.dump() << ", expected " << want.dump();
  return ::testing::AssertionSuccess();
}

struct Case {
  std::string spec;
  std::function<NamedTensors()> inputs;
  std::string expected;  // JSON
};

// Verifies the docstring results and hand-computed curves, for one update
// and for batches of 1 to 7 rows (queries split across updates), with
// dtypes as TorchMetrics returns them (float32 values, int64 top_k).
TEST(RetrievalCurves, HandComputedValues) {
  const double third = 1.0 / 3;
  const std::vector<Case> cases = {
      {"retrieval_precision_recall_curve(max_k=4)", Docstring,
       "[[1.0, 0.5, 0.6666667, 0.5], [0.5, 0.5, 1.0, 1.0], [1, 2, 3, 4]]"},
      {"retrieval_recall_at_fixed_precision(min_precision=0.8)", Docstring, "[0.5, 1]"},
      // Query 0: hits 1, 1, 2 (2 positives); query 1: 1 (1 document); query 2 empty.
      {"retrieval_precision_recall_curve", Three,
       json::array({json::array({(1 + 1 + 0) / 3.0, (0.5 + 0.5) / 3, (2 * third + third) / 3}),
                    json::array({(0.5 + 1) / 3, (0.5 + 1) / 3, (1.0 + 1) / 3}), json::array({1, 2, 3})})
           .dump()},
      {"retrieval_precision_recall_curve(max_k=4, adaptive_k=true, empty_target_action=skip)", Three,
       json::array({json::array({1.0, 0.75, (2 * third + 1) / 2, (2 * third + 1) / 2}),
                    json::array({0.75, 0.75, 1.0, 1.0}), json::array({1, 2, 3, 4})})
           .dump()},
      {"retrieval_precision_recall_curve(max_k=2, empty_target_action=pos, aggregation=min)", Three,
       "[[1.0, 0.5], [0.5, 0.5], [1, 2]]"},
      {"retrieval_precision_recall_curve(max_k=2, aggregation=max)", Three, "[[1.0, 0.5], [1.0, 1.0], [1, 2]]"},
      {"retrieval_precision_recall_curve(max_k=2, aggregation=median)", Three, "[[1.0, 0.5], [0.5, 0.5], [1, 2]]"},
      {"retrieval_precision_recall_curve(max_k=2, aggregation=median, empty_target_action=skip)", Three,
       "[[1.0, 0.5], [0.5, 0.5], [1, 2]]"},
      // ignore_index drops the relevant rows (query 1 entirely): K = 2, every query skipped, zeros.
      {"retrieval_precision_recall_curve(ignore_index=1, empty_target_action=skip)", Three,
       "[[0.0, 0.0], [0.0, 0.0], [1, 2]]"},
      // Best recall 1.0 at precision 0.5 (k = 3), ties to the larger k; none qualifies: recall 0, k = K.
      {"retrieval_recall_at_fixed_precision(max_k=4, adaptive_k=true, empty_target_action=skip)", Three, "[1.0, 4]"},
      {"retrieval_recall_at_fixed_precision(min_precision=0.9, max_k=3)", Three, "[0.0, 3]"},
      {"retrieval_recall_at_fixed_precision(min_precision=0.5, max_k=3)", Three, "[0.5, 1]"},
      // aggregation reaches the curve through the class's **kwargs: max precision [1, 0.5], recall [1, 1].
      {"retrieval_recall_at_fixed_precision(min_precision=0.5, max_k=2, aggregation=max)", Three, "[1.0, 2]"},
  };
  for (const Case& c : cases) {
    for (int64_t batch : {0, 1, 2, 3, 7}) {
      auto r = Eval(c.spec, c.inputs(), batch);
      ASSERT_TRUE(r.ok()) << c.spec << ": " << r.status();
      EXPECT_TRUE(Matches(*r, json::parse(c.expected))) << c.spec << " batch " << batch;
      const ResultTree& first = r->parts.at(0);
      EXPECT_EQ(first.tensor.scalar_type(), at::kFloat) << c.spec;
      EXPECT_EQ(r->parts.back().tensor.scalar_type(), at::kLong) << c.spec;
    }
  }
}

// Verifies the TorchScript backend gives the same tuples, max_k given or not.
TEST(RetrievalCurves, TorchScriptBackend) {
  for (const std::string spec : {"retrieval_precision_recall_curve",
                                 "retrieval_precision_recall_curve(max_k=5, "
                                 "adaptive_k=true, aggregation=median)",
                                 "retrieval_recall_at_fixed_precision(min_precision=0.4)"}) {
    auto eager = Eval(spec, Docstring(), 3);
    auto ts = Eval(spec, Docstring(), 3, exec::Backend::kTorchScript);
    ASSERT_TRUE(eager.ok()) << eager.status();
    ASSERT_TRUE(ts.ok()) << ts.status();
    ASSERT_EQ(eager->parts.size(), ts->parts.size());
    for (size_t i = 0; i < eager->parts.size(); ++i) {
      EXPECT_TRUE(at::equal(eager->parts[i].tensor, ts->parts[i].tensor)) << spec << " part " << i;
    }
  }
}

// Verifies max_k=None reads K from the data in finalize (inspect marks the
// masked_select), while max_k given leaves only the target checks.
TEST(RetrievalCurves, OnlyMaxKNoneReadsTheHostForItsLength) {
  tally::InspectOptions io;
  auto none = tally::Inspect({"retrieval_precision_recall_curve"}, {}, io);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_THAT(*none, HasSubstr("host sync in finalize: masked_select (metrics/retrieval/curves.cc"));
  auto fixed = tally::Inspect({"retrieval_recall_at_fixed_precision(max_k=3)"}, {}, io);
  ASSERT_TRUE(fixed.ok()) << fixed.status();
  EXPECT_THAT(*fixed, ::testing::Not(HasSubstr("masked_select")));
  EXPECT_THAT(*fixed, HasSubstr("update: 0 ATen calls per update"));
}

// Verifies compute without any row: zeros of length max_k, or empty curves
// when max_k is none (TorchMetrics cannot get there: update refuses empty
// input); recall_at_fixed_precision gives (0, K).
TEST(RetrievalCurves, EmptyStates) {
  NamedTensors empty = Inputs({}, {}, {});
  auto r = Eval("retrieval_precision_recall_curve(max_k=3)", empty);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(Matches(*r, json::parse("[[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [1, 2, 3]]")));
  r = Eval("retrieval_precision_recall_curve", empty);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(Matches(*r, json::parse("[[], [], []]")));
  r = Eval("retrieval_recall_at_fixed_precision(max_k=3)", empty);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(Matches(*r, json::parse("[0.0, 3]")));
}

// Verifies empty_target_action=error fails Compute naming the metric and the
// count, and passes when every query has a positive.
TEST(RetrievalCurves, EmptyTargetActionError) {
  EXPECT_THAT(Error("retrieval_precision_recall_curve(empty_target_action=error)", Three()),
              HasSubstr("retrieval_precision_recall_curve: 1 queries without a positive target"));
  EXPECT_THAT(Error("retrieval_recall_at_fixed_precision(max_k=2, empty_target_action=error)", Three()),
              HasSubstr("retrieval_recall_at_fixed_precision: 1 queries without a positive target"));
  EXPECT_EQ(Error("retrieval_precision_recall_curve(empty_target_action=error)", Docstring()), "ok");
}

// Verifies bad arguments are errors naming the metric and the argument.
TEST(RetrievalCurves, BadArguments) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"retrieval_precision_recall_curve(max_k=0)", "max_k must be a positive integer or none"},
      {"retrieval_precision_recall_curve(max_k=1.5)", "max_k"},
      {"retrieval_precision_recall_curve(adaptive_k=3)", "adaptive_k"},
      {"retrieval_precision_recall_curve(empty_target_action=drop)", "empty_target_action"},
      {"retrieval_precision_recall_curve(aggregation=sum)", "aggregation"},
      {"retrieval_precision_recall_curve(ignore_index=0.5)", "ignore_index"},
      {"retrieval_precision_recall_curve(top_k=2)", "top_k"},
      {"retrieval_recall_at_fixed_precision(min_precision=1.5)", "min_precision must be a float in [0, 1]"},
      {"retrieval_recall_at_fixed_precision(min_precision=1)", "min_precision must be a float in [0, 1]"},
      {"retrieval_recall_at_fixed_precision(aggregation=sum)", "aggregation"},
      {"retrieval_recall_at_fixed_precision(top_k=3)", "top_k"},
      {"retrieval_recall_at_fixed_precision(max_k=-2)", "max_k"},
  };
  for (const auto& [spec, what] : cases) {
    std::string msg = Error(spec, Docstring());
    EXPECT_THAT(msg, HasSubstr(spec.substr(0, spec.find('('))));
    EXPECT_THAT(msg, HasSubstr(what)) << spec;
  }
}

// Verifies bad inputs fail naming the input, and non-binary targets fail
// Compute naming the metric and the count.
TEST(RetrievalCurves, BadInputs) {
  NamedTensors int_preds = With(Docstring(), "preds", at::tensor({1, 2, 3, 4, 5, 6, 7}, at::kLong));
  EXPECT_THAT(Error("retrieval_precision_recall_curve", int_preds), HasSubstr("preds"));
  NamedTensors float_idx = With(Docstring(), "indexes", at::zeros({7}, at::kFloat));
  EXPECT_THAT(Error("retrieval_recall_at_fixed_precision", float_idx), HasSubstr("indexes"));
  NamedTensors two_d = With(Docstring(), "target", at::zeros({7, 1}, at::kLong));
  EXPECT_THAT(Error("retrieval_precision_recall_curve", two_d), HasSubstr("target"));
  NamedTensors graded = With(Docstring(), "target", at::tensor({2, 0, 0, 1, 1, 0, 1}, at::kLong));
  EXPECT_THAT(Error("retrieval_precision_recall_curve(max_k=2)", graded),
              HasSubstr("retrieval_precision_recall_curve: target: 1 values outside {0, 1}"));
  EXPECT_THAT(Error("retrieval_recall_at_fixed_precision", graded),
              HasSubstr("retrieval_recall_at_fixed_precision: target: 1 values outside {0, 1}"));
  // ignore_index values are neither checked nor counted.
  EXPECT_EQ(Error("retrieval_precision_recall_curve(ignore_index=2)", graded), "ok");
}

}  // namespace
}  // namespace tally
