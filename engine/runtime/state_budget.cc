#include "engine/runtime/state_budget.h"

#include <unistd.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace tally {

int64_t DefaultStateBudget() {
  // Asked once: updates check their growth against it.
  static const int64_t budget = [] {
    long pages = sysconf(_SC_PHYS_PAGES);
    long page = sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || page <= 0) return int64_t{8} << 30;
    return static_cast<int64_t>(pages) * page / 2;
  }();
  return budget;
}

std::string FormatBytes(int64_t bytes) {
  double b = static_cast<double>(bytes);
  if (b >= (1 << 30)) return absl::StrFormat("%d bytes (%.1f GiB)", bytes, b / (1 << 30));
  if (b >= (1 << 20)) return absl::StrFormat("%d bytes (%.1f MiB)", bytes, b / (1 << 20));
  if (b >= (1 << 10)) return absl::StrFormat("%d bytes (%.1f KiB)", bytes, b / (1 << 10));
  return absl::StrCat(bytes, " bytes");
}

namespace {

// FixedBytes is a type's bytes over its fixed dims; its symbolic dims go to
// `symbols`.
double FixedBytes(const ir::TensorType& t, std::vector<std::string>* symbols) {
  double n = static_cast<double>(ir::DTypeSize(t.dtype));
  for (const ir::Dim& d : t.shape) {
    if (d.is_symbolic()) {
      if (symbols != nullptr) symbols->push_back(d.symbol);
    } else {
      n *= static_cast<double>(d.size);
    }
  }
  return n;
}

double Bound(const std::vector<std::string>& symbols, const SymbolSizes& sizes) {
  double n = 1;
  for (const std::string& sym : symbols) {
    int64_t v = 0;
    for (const auto& [name, size] : sizes) {
      if (*name == sym) {
        v = size;
        break;
      }
    }
    n *= static_cast<double>(v);
  }
  return n;
}

std::string Bytes(double b) {
  return b < 9.2e18 ? FormatBytes(static_cast<int64_t>(b)) : absl::StrFormat("%.3g bytes", b);
}

}  // namespace

std::vector<std::string> SizeDrivers(const ir::StateDecl& s, const std::vector<dsl::CollectionEntry>& entries) {
  std::vector<std::string> out;
  for (const auto& e : entries) {
    if (e.label != s.metric) continue;
    for (const auto& [key, value] : e.size_args) {
      for (const ir::Dim& d : s.type.shape) {
        if (!d.is_symbolic() && value > 1 && (d.size == value || d.size == value + 1)) {
          out.push_back(absl::StrCat(key, "=", value));
          break;
        }
      }
    }
  }
  return out;
}

absl::Status CheckStateBudget(const ir::Module& m, const std::vector<dsl::CollectionEntry>& entries, int64_t budget) {
  if (budget <= 0) budget = DefaultStateBudget();
  // Sum in double too: a product of argument-driven dims may overflow int64.
  double total = 0;
  const ir::StateDecl* largest = nullptr;
  double largest_bytes = -1;
  for (const auto& s : m.states) {
    if (s.reducer == ir::Reducer::kCat) continue;
    double n = static_cast<double>(ir::DTypeSize(s.type.dtype));
    for (const ir::Dim& d : s.type.shape) n *= d.is_symbolic() ? 1 : static_cast<double>(d.size);
    total += n;
    if (n > largest_bytes) {
      largest_bytes = n;
      largest = &s;
    }
  }
  if (total <= static_cast<double>(budget) || largest == nullptr) return absl::OkStatus();
  std::vector<std::string> drivers = SizeDrivers(*largest, entries);
  return absl::ResourceExhaustedError(
      absl::StrCat(largest->metric.empty() ? "program" : largest->metric, ": state '", largest->name, "' ",
                   ir::DTypeName(largest->type.dtype), largest->type.ShapeString(),
                   drivers.empty() ? "" : absl::StrCat(" (from ", absl::StrJoin(drivers, ", "), ")"), " needs ",
                   Bytes(largest_bytes), "; the program's fixed-size states need ", Bytes(total),
                   ", over the state budget of ", FormatBytes(budget), " (--max-state-bytes); nothing was allocated"));
}

std::vector<SizeArg> SizeArgsOf(const std::vector<dsl::CollectionEntry>& entries) {
  std::vector<SizeArg> out;
  for (const auto& e : entries) {
    for (const auto& [key, value] : e.size_args) out.push_back({e.label, key, value});
  }
  return out;
}

Footprint::Footprint(const ir::Graph& g) : graph_(&g) {
  for (const auto& n : g.nodes()) {
    for (const ir::Value* v : n->outputs()) Add(*v);
  }
}

Footprint::Footprint(const std::vector<const ir::Value*>& values) {
  for (const ir::Value* v : values) Add(*v);
}

void Footprint::Add(const ir::Value& v) {
  std::vector<std::string> symbols;
  const double coeff = FixedBytes(v.type(), &symbols);
  std::sort(symbols.begin(), symbols.end());
  auto it = std::find_if(terms_.begin(), terms_.end(), [&](const Term& t) { return t.symbols == symbols; });
  if (it == terms_.end()) {
    terms_.push_back({coeff, std::move(symbols)});
  } else {
    it->coeff += coeff;
  }
}

double Footprint::Bytes(const SymbolSizes& sizes) const {
  double total = 0;
  for (const Term& t : terms_) total += t.coeff * Bound(t.symbols, sizes);
  return total;
}

std::string Footprint::Largest(const SymbolSizes& sizes, const std::vector<SizeArg>& args) const {
  if (graph_ == nullptr) return "";
  const ir::Value* largest = nullptr;
  double largest_bytes = -1;
  for (const auto& n : graph_->nodes()) {
    for (const ir::Value* v : n->outputs()) {
      std::vector<std::string> symbols;
      const double b = FixedBytes(v->type(), &symbols) * Bound(symbols, sizes);
      if (b > largest_bytes) {
        largest_bytes = b;
        largest = v;
      }
    }
  }
  if (largest == nullptr) return "";
  const ir::TensorType& t = largest->type();
  std::vector<std::string> dims, drivers;
  for (const ir::Dim& d : t.shape) {
    dims.push_back(absl::StrCat(d.is_symbolic() ? static_cast<int64_t>(Bound({d.symbol}, sizes)) : d.size));
    if (d.is_symbolic()) continue;
    for (const SizeArg& a : args) {
      const std::string text = absl::StrCat(a.key, "=", a.value, " of ", a.metric);
      if (a.value > 1 && (d.size == a.value || d.size == a.value + 1) &&
          std::find(drivers.begin(), drivers.end(), text) == drivers.end()) {
        drivers.push_back(text);
      }
    }
  }
  return absl::StrCat(ir::DTypeName(t.dtype), t.ShapeString(), " (", absl::StrJoin(dims, " x "), ")",
                      drivers.empty() ? "" : absl::StrCat(" from ", absl::StrJoin(drivers, ", ")));
}

absl::Status CheckFootprint(const Footprint& f, const SymbolSizes& sizes, int64_t budget,
                            const std::vector<SizeArg>& args, absl::string_view metric_names, absl::string_view what) {
  const double need = f.Bytes(sizes);
  if (budget <= 0) budget = DefaultStateBudget();
  if (need <= static_cast<double>(budget)) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      metric_names, ": ", what, " needs ", Bytes(need), " of temporaries (the largest ", f.Largest(sizes, args),
      "), over the budget of ", FormatBytes(budget), " (--max-state-bytes); nothing was allocated"));
}

}  // namespace tally
