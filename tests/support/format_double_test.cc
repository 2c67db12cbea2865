// Tests of support::FormatDouble, the one text form of a double in Tally's
// outputs (IR, specs, results, Prometheus): its forms are pinned, since
// golden files and clients read them.
#include "support/format_double.h"

#include <cmath>
#include <cstdlib>
#include <limits>

#include "engine/ir/attribute.h"
#include "gtest/gtest.h"

namespace tally::support {
namespace {

// Verifies the shortest digits that read back, ".0" on integral values,
// %g's exponent form where it is shorter, and the special values.
TEST(FormatDoubleTest, PrintsTheShortestTextThatReadsBack) {
  EXPECT_EQ(FormatDouble(0.1), "0.1");
  EXPECT_EQ(FormatDouble(3.0), "3.0");
  EXPECT_EQ(FormatDouble(-2.5), "-2.5");
  EXPECT_EQ(FormatDouble(-0.0), "-0.0");
  EXPECT_EQ(FormatDouble(100.0), "1e+02");
  EXPECT_EQ(FormatDouble(1e100), "1e+100");
  EXPECT_EQ(FormatDouble(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(FormatDouble(1.0 / 3.0), "0.3333333333333333");
  EXPECT_EQ(FormatDouble(5e-324), "5e-324");
  EXPECT_EQ(FormatDouble(std::nan("")), "nan");
  EXPECT_EQ(FormatDouble(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(FormatDouble(-std::numeric_limits<double>::infinity()), "-inf");
}

// Verifies that every printed value reads back as the same double.
TEST(FormatDoubleTest, ReadsBackExactly) {
  for (double v : {0.1, 1.0 / 3.0, 2.0 / 3.0, 1e-300, 123456789.123456789, 6.02214076e23, -7.0, 0.5}) {
    EXPECT_EQ(std::strtod(FormatDouble(v).c_str(), nullptr), v) << FormatDouble(v);
  }
}

// Verifies that the IR prints doubles with this function (ir::FormatDouble
// names it).
TEST(FormatDoubleTest, IsTheIrsFormatter) {
  EXPECT_EQ(&ir::FormatDouble, &FormatDouble);
  EXPECT_EQ(ir::AttrToString(ir::Attr(0.1)), "0.1");
}

}  // namespace
}  // namespace tally::support
