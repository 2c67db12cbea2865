// Tests of the text IR: print(parse(t)) == t, parser errors with line
// numbers, and round trips of the modules every registered metric builds.
#include <cmath>
#include <cstdint>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/tally.h"
#include "engine/ir/parser.h"
#include "engine/ir/printer.h"
#include "engine/runtime/compiler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "metrics/registry.h"
#include "metrics/spec.h"
#include "ops/op_verifier.h"
#include "tests/testlib/status_matchers.h"

namespace tally {
namespace {

using ::tally::testing::IsOk;
using ::tally::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

// Every reducer, a custom merge group, a deferred check, int/double/string
// attributes and locations, on cpu.
constexpr char kEveryReducer[] = R"(module {
  state @m.total : f64[]@cpu init=0.0 reducer=sum metric="m"
  state @m.hi : f32[3]@cpu init=-inf reducer=max metric="m"
  state @m.lo : f32[3]@cpu init=inf reducer=min metric="m"
  state @m.rows : i64[R]@cpu init=0.0 reducer=cat metric="m"
  state @m.mu : f64[]@cpu init=0.0 reducer=custom group="m.moments" metric="m"
  state @m.n : f64[]@cpu init=0.0 reducer=custom group="m.moments" metric="m"
  state @m.check0 : i64[]@cpu init=0.0 reducer=sum check="target: {n} labels are \"out of range\"" metric="m"
  graph @update(%preds: f32[N,3]@cpu, %target: i64[N]@cpu) {
    %0 = cast(%preds) {dtype="f64"} : f64[N,3]@cpu loc("metrics/m.cc:10")
    %1 = reduce_sum(%0) : f64[]@cpu loc("metrics/m.cc:11")
    %2 = reduce_max(%preds) {dims=[0]} : f32[3]@cpu
    %3 = reduce_min(%preds) {dims=[0]} : f32[3]@cpu
    %4 = size(%target) {dim=0} : i64[]@cpu
    %5 = cast(%4) {dtype="f64"} : f64[]@cpu
    %6 = safe_div(%1, %5) {zero_division=0.0} : f64[]@cpu
    %7 = constant() {dtype="i64", value=3} : i64[]@cpu
    %8 = ge(%target, %7) : i1[N]@cpu
    %9 = reduce_sum(%8) : i64[]@cpu
    return (m.total: %1, m.hi: %2, m.lo: %3, m.rows: %target, m.mu: %6, m.n: %5, m.check0: %9)
  }
  graph @merge.m.moments(%a.m.mu: f64[]@cpu, %a.m.n: f64[]@cpu, %b.m.mu: f64[]@cpu, %b.m.n: f64[]@cpu) {
    %0 = add(%a.m.n, %b.m.n) : f64[]@cpu
    %1 = mul(%a.m.mu, %a.m.n) : f64[]@cpu
    %2 = mul(%b.m.mu, %b.m.n) : f64[]@cpu
    %3 = add(%1, %2) : f64[]@cpu
    %4 = safe_div(%3, %0) {zero_division=0.0} : f64[]@cpu
    return (m.mu: %4, m.n: %0)
  }
  graph @finalize(%m.total: f64[]@cpu, %m.hi: f32[3]@cpu, %m.lo: f32[3]@cpu, %m.rows: i64[R]@cpu, %m.mu: f64[]@cpu, %m.n: f64[]@cpu, %m.check0: i64[]@cpu) {
    %0 = sub(%m.hi, %m.lo) : f32[3]@cpu
    %1 = reduce_sum(%0) : f32[]@cpu
    %2 = cast(%1) {dtype="f64"} : f64[]@cpu
    %3 = add(%m.mu, %2) : f64[]@cpu
    return (m: %3)
  }
}
)";

// A scatter state (its partial (index, count) rows).
constexpr char kScatter[] = R"(module {
  state @h.counts : i64[4]@cpu init=0.0 reducer=sum scatter=true metric="h"
  graph @update(%rows: i64[N,2]@cpu) {
    return (h.counts: %rows)
  }
  graph @finalize(%h.counts: i64[4]@cpu) {
    return (h: %h.counts)
  }
}
)";

// Symbolic products (`N*4`), multi-result nodes, bool/double/NaN attributes,
// on meta.
constexpr char kMetaSymbolic[] = R"(module {
  state @c.hist : i64[4]@meta init=0.0 reducer=sum metric="c"
  state @c.flat : f32[]@meta init=0.0 reducer=sum metric="c"
  graph @update(%preds: f32[N,4]@meta, %target: i64[N]@meta) {
    %0 = softmax(%preds) {dim=1} : f32[N,4]@meta
    %1 = argmax(%0) {dim=1} : i64[N]@meta
    %2 = one_hot(%target) {num_classes=4} : i1[N,4]@meta
    %3 = histogram(%1) {size=4} : i64[4]@meta
    %4 = flatten(%preds) : f32[N*4]@meta
    %5, %6 = sort(%4) {descending=true, dim=0} : f32[N*4]@meta, i64[N*4]@meta
    %7 = clamp(%5) {max=1.0, min=-1.0} : f32[N*4]@meta
    %8 = reduce_sum(%7) : f32[]@meta
    return (c.hist: %3, c.flat: %8)
  }
  graph @finalize(%c.hist: i64[4]@meta, %c.flat: f32[]@meta) {
    %0 = reduce_sum(%c.hist) : i64[]@meta
    %1 = safe_div(%c.flat, %0) {zero_division=nan} : f32[]@meta
    return (c: %1)
  }
}
)";

// A device this machine lacks: planning needs no hardware.
constexpr char kCuda1[] = R"(module {
  state @s.sum_value : f64[]@cuda:1 init=0.0 reducer=sum metric="sum"
  graph @update(%value: f32[N]@cuda:1) {
    %0 = cast(%value) {dtype="f64"} : f64[N]@cuda:1 loc("metrics/aggregation/aggregation.cc:62")
    %1 = reduce_sum(%0) : f64[]@cuda:1
    return (s.sum_value: %1)
  }
  graph @finalize(%s.sum_value: f64[]@cuda:1) {
    %0 = constant() {dtype="f64", value=0.0} : f64[]@cuda:1
    %1 = add(%s.sum_value, %0) : f64[]@cuda:1
    return (s: %1)
  }
}
)";

// Verifies that the printer reproduces each hand-written module exactly and
// that the parsed modules are valid.
TEST(IrRoundTripTest, PrintOfParseIsIdentity) {
  for (const char* text : {kEveryReducer, kMetaSymbolic, kCuda1, kScatter}) {
    SCOPED_TRACE(text);
    TALLY_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ir::Module> m, ir::ParseModule(text));
    EXPECT_EQ(ir::PrintModule(*m), text);
    EXPECT_THAT(ops::VerifyModule(*m), IsOk());
  }
}

// Verifies that the parsed module has the structure the text describes: every
// reducer, the merge group, the check message with its quotes, and locations.
TEST(IrRoundTripTest, ParsedStructure) {
  TALLY_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ir::Module> m, ir::ParseModule(kEveryReducer));
  ASSERT_EQ(m->states.size(), 7u);
  EXPECT_EQ(m->states[0].reducer, ir::Reducer::kSum);
  EXPECT_EQ(m->states[1].reducer, ir::Reducer::kMax);
  EXPECT_EQ(m->states[1].init, -INFINITY);
  EXPECT_EQ(m->states[2].reducer, ir::Reducer::kMin);
  EXPECT_EQ(m->states[2].init, INFINITY);
  EXPECT_EQ(m->states[3].reducer, ir::Reducer::kCat);
  EXPECT_TRUE(m->states[3].type.shape[0].is_symbolic());
  EXPECT_EQ(m->states[4].reducer, ir::Reducer::kCustom);
  EXPECT_EQ(m->states[4].group, "m.moments");
  EXPECT_EQ(m->states[6].check, "target: {n} labels are \"out of range\"");
  EXPECT_EQ(m->states[6].metric, "m");
  ASSERT_EQ(m->merges.count("m.moments"), 1u);
  EXPECT_EQ(m->merges.at("m.moments")->params().size(), 4u);
  EXPECT_EQ(m->update->nodes()[0]->loc(), "metrics/m.cc:10");
  EXPECT_EQ(m->update->nodes()[1]->loc(), "metrics/m.cc:11");
  EXPECT_EQ(m->update->nodes()[2]->loc(), "");
  // Integer attributes stay integers; the state partial of a cat state may be
  // an update parameter.
  EXPECT_TRUE(std::holds_alternative<int64_t>(m->update->nodes()[7]->attrs().at("value")));
  EXPECT_EQ(m->update->FindReturn("m.rows"), m->update->FindParam("target"));

  TALLY_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ir::Module> meta, ir::ParseModule(kMetaSymbolic));
  const ir::Node& flatten = *meta->update->nodes()[4];
  ASSERT_EQ(flatten.output()->type().rank(), 1);
  EXPECT_EQ(flatten.output()->type().shape[0].symbol, "N*4");
  EXPECT_EQ(flatten.output()->type().device.name, "meta");
  EXPECT_EQ(meta->update->nodes()[5]->outputs().size(), 2u);

  TALLY_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ir::Module> scatter, ir::ParseModule(kScatter));
  EXPECT_TRUE(scatter->states[0].scatter);
  EXPECT_FALSE(m->states[0].scatter);

  TALLY_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ir::Module> cuda, ir::ParseModule(kCuda1));
  EXPECT_EQ(cuda->states[0].type.device.name, "cuda:1");
  EXPECT_EQ(cuda->update->params()[0]->type().device.name, "cuda:1");
}

// Verifies that attributes of every kind survive print -> parse -> print
// exactly: negative and extreme ints, -0.0, tiny/huge doubles, NaN and
// infinities, double and int lists (also empty), strings with quotes and
// backslashes, bools, and a location holding quotes.
TEST(IrRoundTripTest, AttributesOfEveryKind) {
  constexpr char kText[] = R"ir(graph @attrs(%x: f32[N,3]@cpu) {
  %0 = probe(%x) {b=true, c=false, d=-0.0, e=1e-300, f=nan, g=-inf, h=[-1,0,7], i=[0.5,nan,-inf,1e+20]f, j=[]f, k=[], l=-9223372036854775808, m="say \"hi\" \\ back, {x}=(y)", n=0.1, o=2.0, p=-7} : f32[N,3]@cpu loc("a \"quoted\" file.cc:3")
  return (out: %0)
}
)ir";
  TALLY_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ir::Graph> g, ir::ParseGraph(kText));
  EXPECT_EQ(ir::PrintGraph(*g), kText);
  const ir::AttrMap& a = g->nodes()[0]->attrs();
  ASSERT_EQ(a.size(), 15u);
  EXPECT_EQ(std::get<bool>(a.at("b")), true);
  EXPECT_EQ(std::get<bool>(a.at("c")), false);
  EXPECT_TRUE(std::signbit(std::get<double>(a.at("d"))));
  EXPECT_EQ(std::get<double>(a.at("e")), 1e-300);
  EXPECT_TRUE(std::isnan(std::get<double>(a.at("f"))));
  EXPECT_EQ(std::get<double>(a.at("g")), -INFINITY);
  EXPECT_EQ(std::get<std::vector<int64_t>>(a.at("h")), (std::vector<int64_t>{-1, 0, 7}));
  const auto& doubles = std::get<std::vector<double>>(a.at("i"));
  ASSERT_EQ(doubles.size(), 4u);
  EXPECT_EQ(doubles[0], 0.5);
  EXPECT_TRUE(std::isnan(doubles[1]));
  EXPECT_EQ(doubles[2], -INFINITY);
  EXPECT_EQ(doubles[3], 1e20);
  EXPECT_TRUE(std::get<std::vector<double>>(a.at("j")).empty());
  EXPECT_TRUE(std::get<std::vector<int64_t>>(a.at("k")).empty());
  EXPECT_EQ(std::get<int64_t>(a.at("l")), INT64_MIN);
  EXPECT_EQ(std::get<std::string>(a.at("m")), "say \"hi\" \\ back, {x}=(y)");
  EXPECT_EQ(std::get<double>(a.at("n")), 0.1);
  EXPECT_TRUE(std::holds_alternative<double>(a.at("o")));
  EXPECT_EQ(std::get<int64_t>(a.at("p")), -7);
  EXPECT_EQ(g->nodes()[0]->loc(), "a \"quoted\" file.cc:3");
}

// Verifies that doubles print with the fewest digits that parse back to the
// same bits, and that attribute equality is bitwise (NaN == NaN, 0.0 != -0.0).
TEST(IrRoundTripTest, DoublesRoundTripBitExactly) {
  for (double v : {0.1, 1.0 / 3.0, 5e-324, 1.7976931348623157e308, -2.5, 1e21, 123456789.0, 0.30000000000000004}) {
    ir::Attr a = v;
    std::string s = ir::AttrToString(a);
    TALLY_ASSERT_OK_AND_ASSIGN(ir::Attr back, ir::ParseAttr(s));
    ASSERT_TRUE(std::holds_alternative<double>(back)) << s;
    EXPECT_EQ(std::get<double>(back), v) << s;
    EXPECT_TRUE(ir::AttrEquals(a, back)) << s;
  }
  EXPECT_EQ(ir::FormatDouble(0.1), "0.1");
  EXPECT_EQ(ir::FormatDouble(3.0), "3.0");
  EXPECT_TRUE(ir::AttrEquals(ir::Attr(NAN), ir::Attr(NAN)));
  EXPECT_FALSE(ir::AttrEquals(ir::Attr(0.0), ir::Attr(-0.0)));
  EXPECT_FALSE(ir::AttrEquals(ir::Attr(int64_t{1}), ir::Attr(1.0)));
}

// Verifies that malformed attribute values are rejected rather than read as
// something the printer would never write.
TEST(IrParserTest, MalformedAttributes) {
  for (const char* bad : {"\"abc", "\"abc\\\"", "\"a\"b\"", "\"", "[1,2", "[1,x]", "[1.5,2]", "[nan]", "1.2.3", "--1",
                          "abc", "tru", "[1,2]g"}) {
    SCOPED_TRACE(bad);
    EXPECT_THAT(ir::ParseAttr(bad), StatusIs(absl::StatusCode::kInvalidArgument));
  }
  EXPECT_THAT(ir::ParseAttr("\"a\\\\\""), IsOk());  // "a\\" is the string a + backslash
  EXPECT_EQ(std::get<std::string>(*ir::ParseAttr("\"a\\\\\"")), "a\\");
}

// Verifies that a module with no graphs and no states round-trips too.
TEST(IrRoundTripTest, EmptyGraphs) {
  constexpr char kText[] = R"(module {
  graph @update() {
    return ()
  }
  graph @finalize() {
    return ()
  }
}
)";
  TALLY_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ir::Module> m, ir::ParseModule(kText));
  EXPECT_EQ(ir::PrintModule(*m), kText);
}

// Verifies that whole-line `//` comments (the RUN and CHECK lines of the
// .ir pass tests in tests/passes/ir) are skipped before, inside and after
// the module, and do not shift the line numbers errors give.
TEST(IrParserTest, SkipsLineComments) {
  constexpr char kCommented[] = R"(// RUN: tally_opt %s | FileCheck %s
module {
  // a state
  state @m.s : f64[]@cpu init=0.0 reducer=sum metric="m"
  graph @update(%x: f64[N]@cpu) {
    // CHECK: reduce_sum
    %0 = reduce_sum(%x) : f64[]@cpu
    return (m.s: %0)
  }
  graph @finalize(%m.s: f64[]@cpu) {
    return (m: %m.s)
  }
}
// CHECK-NOT: module
)";
  TALLY_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ir::Module> m, ir::ParseModule(kCommented));
  EXPECT_EQ(ir::PrintModule(*m), R"(module {
  state @m.s : f64[]@cpu init=0.0 reducer=sum metric="m"
  graph @update(%x: f64[N]@cpu) {
    %0 = reduce_sum(%x) : f64[]@cpu
    return (m.s: %0)
  }
  graph @finalize(%m.s: f64[]@cpu) {
    return (m: %m.s)
  }
}
)");
  EXPECT_THAT(ir::ParseModule("// c\n// c\nmodule {\n  bogus\n}\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("IR line 4: ")));
}

// Verifies that parser errors are InvalidArgument, carry the line number of
// the offending line and quote it.
TEST(IrParserTest, ErrorsNameTheLine) {
  struct Case {
    const char* name;
    const char* text;
    const char* message;
  };
  const Case cases[] = {
      {"undefined value", R"(module {
  graph @update(%x: f32[N]@cpu) {
    %0 = neg(%x) : f32[N]@cpu
    %1 = add(%0, %7) : f32[N]@cpu
    return (a: %1)
  }
})",
       "IR line 4: use of undefined value: '%7'"},
      {"undefined result", R"(module {
  graph @update(%x: f32[N]@cpu) {
    return (a: %3)
  }
})",
       "IR line 3: use of undefined value"},
      {"duplicate value", R"(module {
  graph @update(%x: f32[N]@cpu) {
    %0 = neg(%x) : f32[N]@cpu
    %0 = abs(%x) : f32[N]@cpu
    return (a: %0)
  }
})",
       "IR line 4: value defined twice: '%0'"},
      {"duplicate parameter", R"(module {
  graph @update(%x: f32[N]@cpu, %x: f32[N]@cpu) {
    return ()
  }
})",
       "IR line 2: duplicate parameter"},
      {"bad dtype", R"(module {
  graph @update(%x: f32[N]@cpu) {
    %0 = neg(%x) : f33[N]@cpu
    return (a: %0)
  }
})",
       "IR line 3: unknown dtype 'f33'"},
      {"bad device", R"(module {
  state @s : f32[]@gpu init=0.0 reducer=sum metric="m"
})",
       "IR line 2: unknown device 'gpu'"},
      {"bad dim", R"(module {
  graph @update(%x: f32[N,-]@cpu) {
    return ()
  }
})",
       "IR line 2: bad dim '-'"},
      {"unknown reducer", R"(module {
  state @s : f32[]@cpu init=0.0 reducer=mean metric="m"
})",
       "IR line 2: unknown reducer 'mean'"},
      {"duplicate state", R"(module {
  state @s : f32[]@cpu init=0.0 reducer=sum metric="m"
  state @s : f32[]@cpu init=0.0 reducer=sum metric="m"
})",
       "IR line 3: duplicate state"},
      {"unclosed graph", R"(module {
  state @s : f32[]@cpu init=0.0 reducer=sum metric="m"
  graph @update(%x: f32[N]@cpu) {
    %0 = neg(%x) : f32[N]@cpu
)",
       "IR line 3: graph is not closed"},
      {"graph without return", R"(module {
  graph @update(%x: f32[N]@cpu) {
    %0 = neg(%x) : f32[N]@cpu
  }
})",
       "IR line 4: expected '%x = op(...)'"},
      {"return without brace", R"(module {
  graph @update(%x: f32[N]@cpu) {
    return (a: %x)
  graph @finalize() {
)",
       "IR line 3: expected '}' after return"},
      {"unclosed module", R"(module {
  graph @update() {
    return ()
  }
)",
       "module is not closed"},
      {"text after module", R"(module {
}
state @s : f32[]@cpu init=0.0 reducer=sum metric="m"
)",
       "IR line 3: text after the end of the module"},
      {"unknown graph", R"(module {
  graph @other() {
    return ()
  }
})",
       "IR line 2: graph must be @update, @finalize or @merge.<group>"},
      {"missing type", R"(module {
  graph @update(%x: f32[N]@cpu) {
    %0 = neg(%x)
    return (a: %0)
  }
})",
       "IR line 3: expected ': type' after the op"},
      {"result count", R"(module {
  graph @update(%x: f32[N]@cpu) {
    %0, %1 = neg(%x) : f32[N]@cpu
    return (a: %0)
  }
})",
       "IR line 3: number of results and types differ"},
      {"bad attribute", R"(module {
  graph @update(%x: f32[N]@cpu) {
    %0 = clamp(%x) {min=abc} : f32[N]@cpu
    return (a: %0)
  }
})",
       "IR line 3: bad attribute value 'abc'"},
      {"unterminated string", R"(module {
  state @s : f32[]@cpu init=0.0 reducer=sum metric="m
})",
       "IR line 2: unterminated string"},
      {"not a module", "graph @update() {\n}\n", "IR line 1: expected 'module {'"},
      {"second update", R"(module {
  graph @update() {
    return ()
  }
  graph @update() {
    return ()
  }
})",
       "IR line 5: second update graph"},
      {"second merge graph", R"(module {
  graph @merge.g() {
    return ()
  }
  graph @merge.g() {
    return ()
  }
})",
       "IR line 5: second merge graph for the group"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_THAT(ir::ParseModule(c.text), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.message)));
  }
}

// Verifies that ParseGraph reports a missing graph and an unbalanced header.
TEST(IrParserTest, GraphErrors) {
  EXPECT_THAT(ir::ParseGraph("  \n"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty")));
  EXPECT_THAT(ir::ParseGraph("graph @g(%x: f32[N]@cpu {\n  return ()\n}\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("IR line 1")));
  EXPECT_THAT(ir::ParseGraph("graph @g(%x f32[N]@cpu) {\n  return ()\n}\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, AllOf(HasSubstr("IR line 1"), HasSubstr("bad parameter"))));
}

// Candidates are specs with default arguments and signatures to build a
// metric for: the tool's default signature, then 2-D float pairs (for
// metrics such as cosine_similarity that need rows of vectors).
std::vector<std::pair<std::string, dsl::Signature>> Candidates(const std::string& name) {
  std::vector<std::pair<std::string, dsl::Signature>> out;
  for (const char* args :
       {"", "num_classes=3", "num_labels=3", "beta=2.0", "beta=2.0, num_classes=3", "beta=2.0, num_labels=3",
        "num_groups=3", "p=3.0", "threshold=0.5", "task=binary", "task=multiclass, num_classes=3", "num_clusters=3",
        "metric=scale_invariant_signal_distortion_ratio", "things=[0, 1], stuffs=[2]"}) {
    std::string text = *args ? absl::StrCat(name, "(", args, ")") : name;
    out.emplace_back(text, tally::DefaultSignature({text}));
  }
  if (absl::StrContains(name, "_at_")) {  // recall_at_fixed_precision(task=binary) requires min_precision
    std::string text = absl::StrCat(name, "(task=binary, min_", name.substr(name.rfind('_') + 1), "=0.5)");
    out.emplace_back(text, tally::DefaultSignature({text}));
  }
  if (absl::StrContains(name, "_at_")) {  // binary_recall_at_fixed_precision & co.: min_precision & co.
    std::string min = absl::StrCat("min_", name.substr(name.rfind('_') + 1), "=0.5");
    for (const char* num : {"", "num_classes=3, ", "num_labels=3, "}) {
      std::string text = absl::StrCat(name, "(", num, min, ")");
      out.emplace_back(text, tally::DefaultSignature({text}));
    }
  }
  out.emplace_back(name,
                   dsl::Signature{{"preds", ir::DType::kFloat32, {8, 3}}, {"target", ir::DType::kFloat32, {8, 3}}});
  return out;
}

// Verifies that print(parse(print(m))) == print(m) for the module every
// registered metric builds for its default signature, before and after the
// default pipeline, and that the parsed modules verify.
TEST(IrRoundTripTest, EveryRegisteredMetric) {
  int built = 0;
  std::vector<std::string> skipped;
  for (const metrics::MetricInfo& info : metrics::AllMetrics()) {
    bool ok = false;
    for (const auto& [text, sig] : Candidates(info.name)) {
      auto spec = metrics::ParseMetricSpec(text);
      ASSERT_THAT(spec, IsOk());
      auto metric = metrics::BuildMetric(*spec, sig, ir::Device{"cpu"});
      if (!metric.ok()) continue;
      ok = true;
      ++built;
      SCOPED_TRACE(text);
      const std::string printed = ir::PrintModule(*metric->module);
      auto parsed = ir::ParseModule(printed);
      ASSERT_THAT(parsed, IsOk()) << printed;
      EXPECT_EQ(ir::PrintModule(**parsed), printed);
      EXPECT_THAT(ops::VerifyModule(**parsed), IsOk());

      std::vector<dsl::CollectionEntry> entries;
      entries.push_back({info.name, std::move(*metric)});
      CompileOptions options;
      auto compiled = CompileModule(entries, options);
      ASSERT_THAT(compiled, IsOk());
      for (const ir::Module* m : {compiled->linked.get(), compiled->module.get()}) {
        const std::string text2 = ir::PrintModule(*m);
        auto reparsed = ir::ParseModule(text2);
        ASSERT_THAT(reparsed, IsOk()) << text2;
        EXPECT_EQ(ir::PrintModule(**reparsed), text2);
        EXPECT_THAT(ops::VerifyModule(**reparsed), IsOk());
        EXPECT_THAT(text2, ::testing::Not(HasSubstr("%<undef>")));
      }
      break;
    }
    if (!ok) skipped.push_back(info.name);
  }
  // Every metric builds for one of the candidates (a new kind of metric
  // needs a candidate spec or signature in Candidates).
  EXPECT_EQ(built, static_cast<int>(metrics::AllMetrics().size()));
  EXPECT_TRUE(skipped.empty()) << "no candidate spec builds for: " << absl::StrJoin(skipped, ", ");
}

}  // namespace
}  // namespace tally
