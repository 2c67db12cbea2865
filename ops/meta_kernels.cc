#include "ops/meta_kernels.h"

#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

namespace tally::ops {
namespace {

at::Tensor WhereMeta(const at::Tensor& cond, const at::Tensor& a, const at::Tensor& b) {
  auto sizes = at::infer_size_dimvector(cond.sizes(), at::infer_size_dimvector(a.sizes(), b.sizes()));
  return at::empty(sizes, a.options().dtype(at::result_type(a, b)));
}

at::Tensor& BinaryOutMeta(const at::Tensor& a, const at::Tensor& b, at::Tensor& out) {
  out.resize_(at::infer_size_dimvector(a.sizes(), b.sizes()));
  return out;
}

at::Tensor& UnaryOutMeta(const at::Tensor& x, at::Tensor& out) {
  out.resize_(x.sizes());
  return out;
}

at::Tensor IsNanMeta(const at::Tensor& x) { return at::empty(x.sizes(), x.options().dtype(at::kBool)); }

at::Tensor IndexSelectMeta(const at::Tensor& x, int64_t dim, const at::Tensor& index) {
  std::vector<int64_t> sizes(x.sizes().begin(), x.sizes().end());
  if (!sizes.empty()) sizes[at::maybe_wrap_dim(dim, x.dim())] = index.numel();
  return at::empty(sizes, x.options());
}

at::Tensor SearchSortedMeta(const at::Tensor&, const at::Tensor& values, bool out_int32, bool,
                            c10::optional<c10::string_view>, const c10::optional<at::Tensor>&) {
  return at::empty(values.sizes(), values.options().dtype(out_int32 ? at::kInt : at::kLong));
}

at::Tensor BucketizeMeta(const at::Tensor& self, const at::Tensor&, bool out_int32, bool) {
  return at::empty(self.sizes(), self.options().dtype(out_int32 ? at::kInt : at::kLong));
}

bool HasMetaKernel(const char* name, const char* overload) {
  auto op = c10::Dispatcher::singleton().findSchema({name, overload});
  return !op.has_value() || op->hasKernelForDispatchKey(c10::DispatchKey::Meta);
}

}  // namespace

void EnsureMetaKernels() {
  static const bool done = [] {
    // The library must outlive every call; it is never destroyed (a static
    // pointer, so LeakSanitizer sees it reachable).
    static auto* lib = new torch::Library(torch::Library::IMPL, "aten", c10::DispatchKey::Meta, __FILE__, __LINE__);
    if (!HasMetaKernel("aten::where", "self")) lib->impl("where.self", TORCH_FN(WhereMeta));
    if (!HasMetaKernel("aten::logical_and", "out")) lib->impl("logical_and.out", TORCH_FN(BinaryOutMeta));
    if (!HasMetaKernel("aten::logical_or", "out")) lib->impl("logical_or.out", TORCH_FN(BinaryOutMeta));
    if (!HasMetaKernel("aten::logical_xor", "out")) lib->impl("logical_xor.out", TORCH_FN(BinaryOutMeta));
    if (!HasMetaKernel("aten::logical_not", "out")) lib->impl("logical_not.out", TORCH_FN(UnaryOutMeta));
    if (!HasMetaKernel("aten::abs", "out")) lib->impl("abs.out", TORCH_FN(UnaryOutMeta));
    if (!HasMetaKernel("aten::isnan", "")) lib->impl("isnan", TORCH_FN(IsNanMeta));
    if (!HasMetaKernel("aten::index_select", "")) lib->impl("index_select", TORCH_FN(IndexSelectMeta));
    if (!HasMetaKernel("aten::searchsorted", "Tensor")) lib->impl("searchsorted.Tensor", TORCH_FN(SearchSortedMeta));
    if (!HasMetaKernel("aten::bucketize", "Tensor")) lib->impl("bucketize.Tensor", TORCH_FN(BucketizeMeta));
    return true;
  }();
  (void)done;
}

}  // namespace tally::ops
