// The metric catalogue: every registered metric with its inputs and the
// arguments its builder reads (type, default, required), found by building
// it over a few representative input signatures and recording what it asks
// SpecArgs for. `tally list-metrics --format markdown` prints it; the
// checked-in docs/metrics.md is its output, kept fresh by a test.
#ifndef TALLY_METRICS_CATALOGUE_H_
#define TALLY_METRICS_CATALOGUE_H_

#include <string>
#include <vector>

namespace tally::metrics {

struct ArgumentDoc {
  std::string name;
  std::string type;          // "int", "one of micro, macro, ...", ...
  std::string default_text;  // spec syntax; "" when required
  bool required = false;
};

struct MetricDoc {
  std::string name;
  std::string domain;
  std::vector<std::string> inputs;
  std::vector<ArgumentDoc> arguments;  // in the order the builder reads them
};

// DescribeMetrics describes every registered metric, sorted by name.
std::vector<MetricDoc> DescribeMetrics();

// CatalogueMarkdown renders `docs` as Markdown: one table per domain.
std::string CatalogueMarkdown(const std::vector<MetricDoc>& docs);

}  // namespace tally::metrics

#endif  // TALLY_METRICS_CATALOGUE_H_
