#include "examples/inference_server/model.h"

#include <torch/script.h>

#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "support/status_macros.h"
#include "support/torch_status.h"

namespace tally::examples {

struct Model::Impl {
  // Mutable: torch::jit::Module::forward is not const, but running a loaded
  // module concurrently is supported (its methods only read parameters).
  mutable torch::jit::Module module;
  at::Device device;
  std::string path;
};

namespace {

// ScriptError keeps the line that says what failed: for an error inside the
// TorchScript interpreter that is the last one ("RuntimeError: ..."), after
// the two tracebacks; otherwise the first.
std::string ScriptError(const char* what) {
  const absl::string_view all = absl::StripTrailingAsciiWhitespace(what);
  if (!absl::StartsWith(all, "The following operation failed in the TorchScript interpreter")) {
    return support::FirstLine(what);
  }
  return std::string(all.substr(all.rfind('\n') + 1));
}

}  // namespace

absl::Status SaveTinyClassifier(const std::string& path, int64_t features, int64_t classes, uint64_t seed) {
  return support::CatchTorch(
      [&] {
        at::Generator gen = at::detail::createCPUGenerator(seed);
        torch::jit::Module m("TinyClassifier");
        m.register_parameter("w", at::randn({features, classes}, gen, at::kFloat), /*is_buffer=*/false);
        m.register_parameter("b", at::randn({classes}, gen, at::kFloat), /*is_buffer=*/false);
        m.define("def forward(self, x):\n  return torch.matmul(x, self.w) + self.b\n");
        m.save(path);
      },
      absl::StrCat("saving the tiny classifier to ", path));
}

absl::StatusOr<std::unique_ptr<Model>> Model::Load(const std::string& path, const std::string& device, int64_t features,
                                                   int64_t classes) {
  std::unique_ptr<Impl> impl;
  TALLY_RETURN_IF_ERROR(support::CatchTorch(
      [&] {
        at::Device dev(device);
        impl.reset(new Impl{torch::jit::load(path, dev), dev, path});
        impl->module.eval();
      },
      absl::StrCat("loading model ", path)));
  std::unique_ptr<Model> model(new Model(std::move(impl), features, classes));
  at::Tensor probe;
  TALLY_RETURN_IF_ERROR(support::CatchTorch(
      [&] {
        probe = at::zeros({1, features}, at::TensorOptions(at::kFloat).device(model->device()));
      },
      "making the probe row"));
  TALLY_ASSIGN_OR_RETURN(at::Tensor out, model->Forward(probe));
  if (out.scalar_type() != at::kFloat || out.dim() != 2 || out.size(0) != 1 || out.size(1) != classes) {
    return absl::InvalidArgumentError(absl::StrCat("model ", path, " maps f32[1, ", features, "] to ",
                                                   c10::str(out.scalar_type(), out.sizes()), ", not f32[1, ", classes,
                                                   "] logits"));
  }
  return model;
}

Model::Model(std::unique_ptr<Impl> impl, int64_t features, int64_t classes)
    : impl_(std::move(impl)), features_(features), classes_(classes) {}

Model::~Model() = default;

const at::Device& Model::device() const { return impl_->device; }

absl::StatusOr<at::Tensor> Model::Forward(const at::Tensor& x) const {
  // Not support::CatchTorch: its first line of an interpreter error says only
  // that the interpreter failed.
  try {
    c10::InferenceMode guard;
    c10::IValue v = impl_->module.forward({x});
    if (v.isTensor()) return v.toTensor();
    return absl::InvalidArgumentError(
        absl::StrCat("model ", impl_->path, ": forward returned ", v.tagKind(), ", not a tensor"));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("model ", impl_->path, ": ", ScriptError(e.what())));
  }
}

}  // namespace tally::examples
