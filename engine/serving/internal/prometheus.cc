#include "engine/serving/internal/prometheus.h"

#include <ATen/ATen.h>

#include <cmath>
#include <functional>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "engine/ir/attribute.h"
#include "support/torch_status.h"

namespace tally::serving::internal {
namespace {

bool NameChar(char c, bool first, bool colon) {
  const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':');
  return alpha || (!first && c >= '0' && c <= '9');
}

std::string EscapeHelp(absl::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else
      out.push_back(c);
  }
  return out;
}

}  // namespace

bool IsValidMetricName(absl::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i)
    if (!NameChar(name[i], i == 0, /*colon=*/true)) return false;
  return true;
}

bool IsValidLabelName(absl::string_view name) {
  if (name.empty() || absl::StartsWith(name, "__")) return false;
  for (size_t i = 0; i < name.size(); ++i)
    if (!NameChar(name[i], i == 0, /*colon=*/false)) return false;
  return true;
}

std::string EscapeLabelValue(absl::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out.push_back(c);
  }
  return out;
}

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 9007199254740992.0) {
    return absl::StrCat(static_cast<int64_t>(v));
  }
  return ir::FormatDouble(v);
}

Exposition::Fam* Exposition::Find(const std::string& name) {
  for (Fam& f : families_)
    if (f.name == name) return &f;
  return nullptr;
}

void Exposition::Family(const std::string& name, absl::string_view type, absl::string_view help) {
  if (Find(name) != nullptr) return;
  families_.push_back({name, std::string(type), std::string(help), {}});
}

void Exposition::AddSample(const std::string& name, Labels labels, double value) {
  Fam* f = Find(name);
  if (f == nullptr) return;
  std::string line = name;
  if (!labels.empty()) {
    line += "{";
    for (size_t i = 0; i < labels.size(); ++i) {
      if (i) line += ",";
      absl::StrAppend(&line, labels[i].first, "=\"", EscapeLabelValue(labels[i].second), "\"");
    }
    line += "}";
  }
  absl::StrAppend(&line, " ", FormatValue(value));
  f->lines.push_back(std::move(line));
}

void Exposition::AddTensor(const std::string& name, Labels labels, const at::Tensor& in, int64_t groups) {
  at::Tensor t = in.to(at::kCPU).to(at::kDouble).contiguous();
  const double* data = t.data_ptr<double>();
  const int64_t n = t.numel();
  if (t.dim() == 0) {
    AddSample(name, std::move(labels), data[0]);
    return;
  }
  std::vector<int64_t> sizes(t.sizes().begin(), t.sizes().end());
  std::vector<int64_t> idx(sizes.size(), 0);
  const size_t lead = groups > 0 && sizes[0] == groups ? 1 : 0;  // the group axis, if any
  for (int64_t k = 0; k < n; ++k) {
    Labels l = labels;
    if (lead == 1) l.emplace_back("group", absl::StrCat(idx[0]));
    const std::vector<int64_t> rest(idx.begin() + lead, idx.end());
    if (rest.size() == 1) {
      l.emplace_back("class", absl::StrCat(rest[0]));
    } else if (!rest.empty()) {
      l.emplace_back("index", absl::StrJoin(rest, ","));
    }
    AddSample(name, std::move(l), data[k]);
    for (int d = static_cast<int>(sizes.size()) - 1; d >= 0; --d) {
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
    }
  }
}

absl::Status Exposition::AddResult(const std::string& name, const Labels& labels, const ResultTree& result,
                                   int64_t groups) {
  Fam* f = Find(name);
  if (f == nullptr) return absl::InternalError(absl::StrCat("prometheus: no family ", name));
  const size_t before = f->lines.size();
  // Depth-first over the tuple, with the path as the `part` label.
  std::function<void(const ResultTree&, const std::string&)> walk = [&](const ResultTree& r, const std::string& path) {
    if (r.is_leaf()) {
      Labels l = labels;
      if (!path.empty()) l.emplace_back("part", path);
      if (r.tensor.defined()) AddTensor(name, std::move(l), r.tensor, groups);
      return;
    }
    for (size_t i = 0; i < r.parts.size(); ++i)
      walk(r.parts[i], path.empty() ? absl::StrCat(i) : absl::StrCat(path, "/", i));
  };
  absl::Status st = support::CatchTorch([&] { walk(result, ""); }, name);
  if (!st.ok()) f->lines.resize(before);
  return st;
}

std::string Exposition::Render() const {
  std::string out;
  for (const Fam& f : families_) {
    absl::StrAppend(&out, "# HELP ", f.name, " ", EscapeHelp(f.help), "\n# TYPE ", f.name, " ", f.type, "\n");
    for (const std::string& l : f.lines) absl::StrAppend(&out, l, "\n");
  }
  return out;
}

SessionExposition::SessionExposition(const std::string& prefix, bool windows) : prefix_(prefix), out_(prefix) {
  const std::string& p = prefix_;
  out_.Family(p + "_metric", "gauge", "Metric value over every update (one sample per output element).");
  if (windows) out_.Family(p + "_window_metric", "gauge", "Metric value over a window of recent updates.");
  out_.Family(p + "_updates_total", "counter", "Accepted updates.");
  out_.Family(p + "_rows_total", "counter", "Rows of accepted updates.");
  out_.Family(p + "_rejected_updates_total", "counter", "Rejected updates (bad input).");
  out_.Family(p + "_compute_errors_total", "counter", "Computes that failed (e.g. a deferred value check).");
}

int64_t GroupsOf(absl::string_view spec) {
  // The argument list's `num_groups = <digits>` (the spec grammar: name(k=v, ...)).
  const size_t open = spec.find('(');
  if (open == absl::string_view::npos) return 0;
  for (absl::string_view arg : absl::StrSplit(spec.substr(open + 1), absl::ByAnyChar(",)"))) {
    std::vector<absl::string_view> kv = absl::StrSplit(arg, absl::MaxSplits('=', 1));
    int64_t g = 0;
    if (kv.size() == 2 && absl::StripAsciiWhitespace(kv[0]) == "num_groups" &&
        absl::SimpleAtoi(absl::StripAsciiWhitespace(kv[1]), &g) && g > 0) {
      return g;
    }
  }
  return 0;
}

absl::Status SessionExposition::AddMetric(const std::string& set, const std::string& metric, const ResultTree& value) {
  return out_.AddResult(prefix_ + "_metric", {{"set", set}, {"metric", metric}}, value, GroupsOf(metric));
}

absl::Status SessionExposition::AddWindowMetric(const std::string& set, const std::string& window,
                                                const std::string& metric, const ResultTree& value) {
  return out_.AddResult(prefix_ + "_window_metric", {{"set", set}, {"window", window}, {"metric", metric}}, value,
                        GroupsOf(metric));
}

void SessionExposition::AddCounters(const std::string& set, int64_t updates, int64_t rows, int64_t rejected,
                                    int64_t compute_errors) {
  const std::string& p = prefix_;
  out_.AddSample(p + "_updates_total", {{"set", set}}, static_cast<double>(updates));
  out_.AddSample(p + "_rows_total", {{"set", set}}, static_cast<double>(rows));
  out_.AddSample(p + "_rejected_updates_total", {{"set", set}}, static_cast<double>(rejected));
  out_.AddSample(p + "_compute_errors_total", {{"set", set}}, static_cast<double>(compute_errors));
}

}  // namespace tally::serving::internal
