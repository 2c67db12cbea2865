// FormatDouble: the one text form of a double in Tally's outputs (the IR's
// attributes and state inits, metric specs, results as text and JSON,
// Prometheus samples).
#ifndef TALLY_SUPPORT_FORMAT_DOUBLE_H_
#define TALLY_SUPPORT_FORMAT_DOUBLE_H_

#include <string>

namespace tally::support {

// FormatDouble prints `v` with the fewest significant digits (printf's %g,
// 1 to 17) that read back as the same double, with ".0" added when that
// leaves neither a point nor an exponent ("3.0", "0.1", "1e+100", "-0.0");
// NaN is "nan" and the infinities "inf" and "-inf".
std::string FormatDouble(double v);

}  // namespace tally::support

#endif  // TALLY_SUPPORT_FORMAT_DOUBLE_H_
