#include "examples/inference_server/request.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/strings/str_cat.h"

namespace tally::examples {
namespace {

// Short prints a JSON value for an error message: one line, at most ~40 chars.
std::string Short(const nlohmann::json& x) {
  std::string s = x.dump();
  return s.size() <= 40 ? s : s.substr(0, 37) + "...";
}

}  // namespace

absl::StatusOr<PredictRequest> ParsePredictRequest(absl::string_view body, int64_t features, int64_t classes) {
  // No exceptions: a parse error is a discarded value.
  const nlohmann::json j = nlohmann::json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return absl::InvalidArgumentError("body is not valid JSON");
  if (!j.is_object()) return absl::InvalidArgumentError("body must be a JSON object");
  auto f = j.find("features");
  if (f == j.end() || !f->is_array() || f->empty()) {
    return absl::InvalidArgumentError("'features' must be a non-empty list of rows");
  }
  PredictRequest req;
  req.rows = static_cast<int64_t>(f->size());
  req.features.reserve(req.rows * features);
  for (int64_t r = 0; r < req.rows; ++r) {
    const nlohmann::json& row = (*f)[r];
    if (!row.is_array() || static_cast<int64_t>(row.size()) != features) {
      return absl::InvalidArgumentError(
          absl::StrCat("'features' row ", r, " must be a list of ", features, " numbers"));
    }
    for (const nlohmann::json& x : row) {
      const double v = x.is_number() ? x.get<double>() : NAN;
      if (!(std::fabs(v) <= std::numeric_limits<float>::max())) {  // also false for NaN
        return absl::InvalidArgumentError(
            absl::StrCat("'features' row ", r, " holds ", Short(x), ", not a finite float"));
      }
      req.features.push_back(static_cast<float>(v));
    }
  }
  auto l = j.find("labels");
  if (l == j.end()) return req;
  if (!l->is_array() || static_cast<int64_t>(l->size()) != req.rows) {
    return absl::InvalidArgumentError(
        absl::StrCat("'labels' must be a list of ", req.rows, " class ids (one per row)"));
  }
  std::vector<int64_t> labels;
  labels.reserve(req.rows);
  for (const nlohmann::json& x : *l) {
    // is_number_integer also holds for unsigned; a huge unsigned is out of range below.
    const bool in_range =
        x.is_number_integer() && (x.is_number_unsigned() ? x.get<uint64_t>() < static_cast<uint64_t>(classes)
                                                         : x.get<int64_t>() >= 0 && x.get<int64_t>() < classes);
    if (!in_range) {
      return absl::InvalidArgumentError(
          absl::StrCat("'labels' must hold class ids in [0, ", classes, "), got ", Short(x)));
    }
    labels.push_back(x.get<int64_t>());
  }
  req.labels = std::move(labels);
  return req;
}

}  // namespace tally::examples
