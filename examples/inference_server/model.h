// Model: the TorchScript classifier the inference server runs.
//
// SaveTinyClassifier writes a small linear classifier as a TorchScript file
// (so the example needs no Python); Model loads any TorchScript file onto a
// device and runs it. This is the only translation unit of the example that
// includes <torch/script.h>; callers see ATen tensors and absl::Status, never
// a c10::Error.
#ifndef TALLY_EXAMPLES_INFERENCE_SERVER_MODEL_H_
#define TALLY_EXAMPLES_INFERENCE_SERVER_MODEL_H_

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tally::examples {

// SaveTinyClassifier writes to `path` a TorchScript module whose forward is
// `torch.matmul(x, self.w) + self.b`, with w f32[features, classes] and
// b f32[classes] drawn from a CPU generator seeded with `seed`.
absl::Status SaveTinyClassifier(const std::string& path, int64_t features, int64_t classes, uint64_t seed);

// Model is a loaded TorchScript module mapping f32[N, features] to logits
// f32[N, classes] on one device. Forward may be called from many threads.
class Model {
 public:
  // Load reads the module at `path` onto `device` ("cpu", "cuda:0", ...) and
  // checks with one probe row that it maps f32[1, features] to
  // f32[1, classes].
  static absl::StatusOr<std::unique_ptr<Model>> Load(const std::string& path, const std::string& device,
                                                     int64_t features, int64_t classes);
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  // Forward runs the module under InferenceMode on `x` (f32[N, features] on
  // the model's device) and returns the logits there. A LibTorch error is an
  // InvalidArgument naming the model.
  absl::StatusOr<at::Tensor> Forward(const at::Tensor& x) const;

  // device is where the module's parameters, inputs and outputs live.
  const at::Device& device() const;
  int64_t features() const { return features_; }
  int64_t classes() const { return classes_; }

 private:
  struct Impl;
  Model(std::unique_ptr<Impl> impl, int64_t features, int64_t classes);
  std::unique_ptr<Impl> impl_;
  int64_t features_;
  int64_t classes_;
};

}  // namespace tally::examples

#endif  // TALLY_EXAMPLES_INFERENCE_SERVER_MODEL_H_
