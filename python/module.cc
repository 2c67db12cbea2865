// The extension module `tally._tally`: MetricProgram (metric_program.h) to
// Python. Tensors cross both ways as the same storage (torch's own pybind11
// caster, torch/csrc/utils/pybind.h); the GIL is released around every call
// that runs the engine; an error status becomes ValueError (bad input),
// MemoryError (the state budget) or RuntimeError, carrying its message.
// The Python surface (Metric, Collection) is python/tally/__init__.py.
#include <torch/csrc/utils/pybind.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/DynamicTypes.h>
#include <torch/csrc/autograd/python_variable.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "api/state_files.h"
#include "api/version.h"
#include "engine/ir/aten_types.h"
#include "metrics/catalogue.h"
#include "metrics/registry.h"
#include "python/metric_program.h"

namespace py = pybind11;

namespace tally::python {
namespace {

// Raise turns a failed status into the Python exception of its kind. The
// caller holds the GIL.
[[noreturn]] void Raise(const absl::Status& st) {
  const std::string message(st.message());
  switch (st.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kAlreadyExists:
      throw py::value_error(message);
    case absl::StatusCode::kResourceExhausted:
      PyErr_SetString(PyExc_MemoryError, message.c_str());
      throw py::error_already_set();
    default:
      throw std::runtime_error(message);
  }
}

void Check(const absl::Status& st) {
  if (!st.ok()) Raise(st);
}

template <typename T>
T Check(absl::StatusOr<T> v) {
  if (!v.ok()) Raise(v.status());
  return *std::move(v);
}

// Unlocked runs `f` (an engine call) with the GIL released and returns its
// result once the GIL is held again.
template <typename F>
auto Unlocked(F&& f) {
  py::gil_scoped_release release;
  return f();
}

// Inputs reads a {name: Tensor} dict in its order; the tensors are the
// caller's (no copy, no conversion).
NamedTensors Inputs(const py::dict& inputs) {
  NamedTensors named;
  for (const auto& [key, value] : inputs) {
    const std::string name = py::cast<std::string>(key);
    if (!THPVariable_Check(value.ptr())) {
      throw py::value_error("input '" + name + "': expected a torch.Tensor, got " +
                            std::string(py::str(py::type::of(value).attr("__name__"))));
    }
    named.emplace_back(name, THPVariable_Unpack(value.ptr()));
  }
  return named;
}

// ToPython gives a result as TorchMetrics does: a tensor, a tuple of parts
// (roc's (fpr, tpr, thresholds)), whose parts may be lists (per class), or
// a dict of tensors (mean_average_precision).
py::object ToPython(const ResultTree& tree, bool top = true) {
  if (tree.is_leaf()) return py::cast(tree.tensor);
  if (!tree.keys.empty() && tree.keys.size() == tree.parts.size()) {
    py::dict out;
    for (size_t i = 0; i < tree.keys.size(); ++i) out[py::str(tree.keys[i])] = ToPython(tree.parts[i], false);
    return std::move(out);
  }
  py::list parts;
  for (const ResultTree& part : tree.parts) parts.append(ToPython(part, false));
  if (top) return py::tuple(parts);
  return std::move(parts);
}

py::list Results(const std::vector<ResultTree>& trees) {
  py::list out;
  for (const ResultTree& tree : trees) out.append(ToPython(tree));
  return out;
}

py::list Catalogue() {
  py::list out;
  for (const metrics::MetricDoc& doc : metrics::DescribeMetrics()) {
    py::list args;
    for (const metrics::ArgumentDoc& a : doc.arguments) {
      args.append(py::dict(py::arg("name") = a.name, py::arg("type") = a.type,
                           py::arg("default") = a.required ? py::object(py::none()) : py::str(a.default_text),
                           py::arg("required") = a.required));
    }
    out.append(py::dict(py::arg("name") = doc.name, py::arg("domain") = doc.domain, py::arg("inputs") = doc.inputs,
                        py::arg("arguments") = args));
  }
  return out;
}

// Program is the Python handle: MetricProgram behind a shared_ptr.
using Program = MetricProgram;

void DefineModule(py::module_& m) {
  m.doc() = "Tally's engine (the extension behind the `tally` package)";
  m.attr("__version__") = kTallyVersion;
  m.def("list_metrics", &Catalogue, "Every metric: name, domain, inputs and arguments (with defaults).");
  m.def(
      "metric_inputs",
      [](const std::string& name) -> py::object {
        const metrics::MetricInfo* info = metrics::FindMetric(name);
        if (info == nullptr) return py::none();
        return py::cast(info->inputs);
      },
      "The inputs a metric reads, in order (None for an unknown name).");

  py::class_<Program, std::shared_ptr<Program>>(m, "Program")
      .def_static(
          "create",
          [](std::vector<std::string> specs, const std::string& device, int64_t max_state_bytes) {
            return std::shared_ptr<Program>(
                Check(Unlocked([&] { return Program::Create(std::move(specs), device, max_state_bytes); })));
          },
          py::arg("specs"), py::arg("device") = "cpu", py::arg("max_state_bytes") = 0)
      .def_static(
          "from_state_files",
          [](const std::vector<std::pair<std::string, py::bytes>>& files, const std::string& device,
             int64_t max_state_bytes) {
            std::vector<StateSource> sources;
            for (const auto& [name, bytes] : files) sources.push_back({name, std::string(bytes)});
            return std::shared_ptr<Program>(
                Check(Unlocked([&] { return Program::FromStateFiles(sources, device, max_state_bytes); })));
          },
          py::arg("files"), py::arg("device") = "cpu", py::arg("max_state_bytes") = 0)
      .def("prepare",
           [](Program& p, const py::dict& inputs) {
             NamedTensors named = Inputs(inputs);
             Check(Unlocked([&] { return p.Prepare(named); }));
           })
      .def("update",
           [](Program& p, const py::dict& inputs) {
             NamedTensors named = Inputs(inputs);
             Check(Unlocked([&] { return p.Update(named); }));
           })
      .def("update_args",
           [](Program& p, const py::tuple& names, const py::args& args) {
             // The common call, update(preds, target): positional tensors
             // under the metric's input names, without a dict. False (and
             // nothing done) when an argument is not a tensor or there are
             // more than names: the caller converts them and calls update.
             if (args.size() > names.size()) return false;
             NamedTensors named;
             named.reserve(args.size());
             for (size_t i = 0; i < args.size(); ++i) {
               PyObject* arg = args[i].ptr();
               if (!THPVariable_Check(arg)) return false;
               named.emplace_back(py::cast<std::string>(names[i]), THPVariable_Unpack(arg));
             }
             Check(Unlocked([&] { return p.Update(named); }));
             return true;
           })
      .def("compute", [](const Program& p) { return Results(Check(Unlocked([&] { return p.Compute(); }))); })
      .def("forward",
           [](Program& p, const py::dict& inputs) {
             NamedTensors named = Inputs(inputs);
             return Results(Check(Unlocked([&] { return p.Forward(named); })));
           })
      .def("reset", [](Program& p) { Check(p.Reset()); })
      .def("merge", [](Program& p, const Program& other) { Check(Unlocked([&] { return p.Merge(other); })); })
      .def("to", [](Program& p, const std::string& device) { Check(Unlocked([&] { return p.To(device); })); })
      .def("save_state", [](const Program& p) { return py::bytes(Check(Unlocked([&] { return p.SaveState(); }))); })
      .def("load_state",
           [](Program& p, const py::bytes& bytes) {
             std::string data(bytes);
             Check(Unlocked([&] { return p.LoadState(data); }));
           })
      .def(
          "sync",
          [](Program& p, const py::object& group, double timeout_seconds) {
            // The caller's own c10d group: the object torch.distributed
            // holds (pybind11 shares its type with torch._C).
            c10::intrusive_ptr<c10d::ProcessGroup> pg;
            try {
              pg = group.cast<c10::intrusive_ptr<c10d::ProcessGroup>>();
            } catch (const py::cast_error&) {
              throw py::value_error("sync: group is not a torch.distributed ProcessGroup");
            }
            dist::SyncStats s = Check(Unlocked([&] { return p.Sync(*pg, absl::Seconds(timeout_seconds)); }));
            return py::dict(py::arg("collectives") = s.collectives, py::arg("bytes_sent") = s.bytes_sent);
          },
          py::arg("group"), py::arg("timeout_seconds") = 30.0)
      .def("unsync", &Program::Unsync)
      .def(
          "inspect", [](const Program& p, const std::string& format) { return Check(p.Inspect(format)); },
          py::arg("format") = "text")
      .def_property_readonly("compiled", &Program::compiled)
      .def_property_readonly("specs", &Program::specs)
      .def_property_readonly("labels", &Program::labels)
      .def_property_readonly("device", &Program::device)
      .def_property_readonly(
          "signature",
          [](const Program& p) {
            py::list out;
            for (const dsl::InputSpec& in : p.signature()) {
              auto* dtype = torch::getTHPDtype(ir::ToScalarType(in.dtype));
              out.append(py::make_tuple(in.name, py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(dtype)),
                                        in.shape));
            }
            return out;
          })
      .def("_last_input_data_ptrs", [](const Program& p) {
        py::dict out;
        for (const auto& [name, ptr] : p.last_input_data_ptrs()) out[py::str(name)] = ptr;
        return out;
      });
}

}  // namespace
}  // namespace tally::python

PYBIND11_MODULE(_tally, m) { tally::python::DefineModule(m); }
