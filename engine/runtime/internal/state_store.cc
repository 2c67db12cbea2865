#include "engine/runtime/internal/state_store.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "engine/exec/stream_copy.h"
#include "engine/ir/aten_types.h"
#include "support/status_macros.h"
#include "support/torch_status.h"

namespace tally::runtime::internal {
namespace {

// AppendRows copies `src` into `dst`, the rows after a cat state's end: a
// streaming memcpy (exec/stream_copy.h) for contiguous CPU tensors of one dtype (an update of a
// retrieval collection is three such copies, and copy_'s dispatch and
// TensorIterator setup would cost more than the bytes), copy_ otherwise.
// `buf` is the state's contiguous buffer and `len` its current rows; the
// fast path addresses the rows directly rather than through a narrowed view
// (a TensorImpl per state per update).
void AppendRows(const at::Tensor& buf, int64_t len, const at::Tensor& src) {
  if (buf.is_cpu() && src.is_cpu() && buf.scalar_type() == src.scalar_type() && buf.is_contiguous() &&
      src.is_contiguous() && buf.sizes().slice(1) == src.sizes().slice(1)) {
    const size_t row_bytes = src.nbytes() / src.size(0);
    exec::StreamCopy(static_cast<char*>(buf.data_ptr()) + len * row_bytes, src.data_ptr(), src.nbytes());
    return;
  }
  buf.narrow(0, len, src.size(0)).copy_(src);
}

// AddInPlace folds a partial into a sum state of the same sizes and dtype:
// small contiguous CPU states (counts, confusion matrices) by a loop, since
// add_'s dispatch costs more than a dozen additions; add_ otherwise. The
// result is the same elementwise a + b.
template <typename T>
void AddLoop(at::Tensor& state, const at::Tensor& partial) {
  T* s = state.data_ptr<T>();
  const T* p = partial.data_ptr<T>();
  for (int64_t i = 0, n = state.numel(); i < n; ++i) s[i] += p[i];
}
void AddInPlace(at::Tensor& state, const at::Tensor& partial) {
  if (state.is_cpu() && partial.is_cpu() && state.numel() <= 4096 && state.is_contiguous() && partial.is_contiguous() &&
      state.scalar_type() == partial.scalar_type()) {
    switch (state.scalar_type()) {
      case at::kLong:
        return AddLoop<int64_t>(state, partial);
      case at::kDouble:
        return AddLoop<double>(state, partial);
      case at::kFloat:
        return AddLoop<float>(state, partial);
      default:
        break;
    }
  }
  state.add_(partial);
}

// RowBytes: the bytes of one row of a cat state's partial.
double RowBytes(const at::Tensor& t) {
  double row = static_cast<double>(t.element_size());
  for (int64_t d = 1; d < t.dim(); ++d) row *= static_cast<double>(t.size(d));
  return row;
}

}  // namespace

absl::Status StateStore::Init(const std::vector<ir::StateDecl>* decls, ir::Device device, std::string what) {
  decls_ = decls;
  device_ = std::move(device);
  what_ = std::move(what);
  TALLY_ASSIGN_OR_RETURN(states_, InitialStates());
  return absl::OkStatus();
}

absl::StatusOr<std::vector<at::Tensor>> StateStore::InitialStates() const {
  std::vector<at::Tensor> out;
  TALLY_ASSIGN_OR_RETURN(c10::Device dev, ir::ToDevice(device_));
  // Planning for a device needs no hardware; holding states on it does. Say
  // so plainly instead of passing on ATen's list of dispatch keys.
  const bool available = dev.is_cuda()
                             ? at::hasCUDA() && (!dev.has_index() || static_cast<int64_t>(dev.index()) <
                                                                         static_cast<int64_t>(at::getNumGPUs()))
                         : dev.is_mps() ? at::hasMPS()
                                        : true;
  if (!available) {
    return absl::FailedPreconditionError(
        absl::StrCat(what_, ": cannot create states on ", device_.name,
                     ": the device is not available on this machine (plan for it with `tally inspect --device ",
                     device_.name, "`)"));
  }
  absl::Status st = support::CatchTorch(
      [&] {
        for (const auto& s : *decls_) {
          std::vector<int64_t> sizes;
          for (const auto& d : s.type.shape) sizes.push_back(d.is_symbolic() ? 0 : d.size);
          auto opts = at::TensorOptions().dtype(ir::ToScalarType(s.type.dtype)).device(dev);
          out.push_back(s.reducer == ir::Reducer::kCat ? at::empty(sizes, opts) : at::full(sizes, s.init, opts));
        }
      },
      absl::StrCat(what_, ": creating states on ", device_.name));
  TALLY_RETURN_IF_ERROR(st);
  return out;
}

bool StateStore::SumsFoldInPlace(const std::vector<at::Tensor>& partials, exec::FoldOf of) const {
  const auto& decls = *decls_;
  bool in_place = true;
  for (size_t i = 0; i < decls.size() && in_place; ++i) {
    if (decls[i].reducer != ir::Reducer::kSum) continue;
    const at::Tensor& a = states_[i];
    const at::Tensor& b = partials[i];
    const bool rows = decls[i].scatter && of == exec::FoldOf::kPartials;
    in_place = (rows || a.sizes() == b.sizes()) && a.scalar_type() == b.scalar_type() && a.device() == b.device() &&
               a.is_contiguous();
  }
  return in_place;
}

bool StateStore::IsViewOfBuffer(size_t i) const {
  if (i >= cat_buffers_.size() || !cat_buffers_[i].defined() || !states_[i].defined()) return false;
  const at::Tensor& cur = states_[i];
  const at::Tensor& buf = cat_buffers_[i];
  return cur.is_contiguous() && cur.storage().is_alias_of(buf.storage()) && cur.storage_offset() == 0;
}

int64_t StateStore::CatAllocatedBytes() const {
  const auto& decls = *decls_;
  int64_t bytes = 0;
  for (size_t i = 0; i < decls.size() && i < states_.size(); ++i) {
    if (decls[i].reducer != ir::Reducer::kCat || !states_[i].defined()) continue;
    bytes += IsViewOfBuffer(i) ? static_cast<int64_t>(cat_buffers_[i].nbytes()) : states_[i].nbytes();
  }
  return bytes;
}

absl::Status StateStore::FoldInPlace(const std::vector<at::Tensor>& partials, std::vector<at::Tensor> folded,
                                     int64_t max_cat_bytes, exec::FoldOf of) {
  const auto& decls = *decls_;
  std::vector<at::Tensor>& next = folded;
  // Cat states grow by amortized doubling: each is a prefix view of a buffer
  // with spare rows, so an update copies only its own rows. (The buffer is
  // recognized by its storage: an empty view's data_ptr() is null.)
  //
  // The buffers too small are found first: while one is replaced, the old
  // and the new coexist, so the room for spare rows is what the budget
  // leaves after everything held plus the new buffers' exact lengths. Their
  // spare rows are that room shared in proportion (at most as many as their
  // rows, or 64 rows in all).
  if (cat_buffers_.size() != decls.size()) cat_buffers_.resize(decls.size());  // undefined: no buffer yet
  std::vector<int64_t> need_rows(decls.size(), -1);                            // -1: the buffer takes the rows
  double exact = 0;  // the new buffers' bytes at their exact lengths
  for (size_t i = 0; i < decls.size(); ++i) {
    if (decls[i].reducer != ir::Reducer::kCat) continue;
    const at::Tensor& add = partials[i];
    const int64_t rows = states_[i].size(0) + add.size(0);
    const at::Tensor& buf = cat_buffers_[i];
    const bool usable = IsViewOfBuffer(i) && buf.size(0) >= rows && buf.scalar_type() == add.scalar_type() &&
                        buf.device() == add.device() && buf.sizes().slice(1) == add.sizes().slice(1);
    if (usable) continue;
    need_rows[i] = rows;
    exact += static_cast<double>(rows) * RowBytes(add);
  }
  const double room = static_cast<double>(max_cat_bytes) - static_cast<double>(CatAllocatedBytes()) - exact;
  const double share = exact <= 0 ? 0 : std::max(0.0, room / exact);  // spare bytes per needed byte
  std::vector<at::Tensor> buffers(decls.size());
  TALLY_RETURN_IF_ERROR(support::CatchTorch(
      [&] {
        for (size_t i = 0; i < decls.size(); ++i) {
          if (decls[i].reducer != ir::Reducer::kCat) continue;
          const at::Tensor& cur = states_[i];
          const at::Tensor& add = partials[i];
          const int64_t len = cur.size(0), n = add.size(0);
          at::Tensor buf = cat_buffers_[i];
          if (need_rows[i] >= 0) {
            std::vector<int64_t> sizes(cur.sizes().begin(), cur.sizes().end());
            const int64_t rows = len + n;
            const double spare =
                std::min<double>(std::max<int64_t>(rows, 64 - rows), share * static_cast<double>(rows));
            sizes[0] = rows + static_cast<int64_t>(spare);
            buf = at::empty(sizes, cur.options());
            if (len > 0) buf.narrow(0, 0, len).copy_(cur);
          }
          if (n > 0) AppendRows(buf, len, add);
          next[i] = buf.narrow(0, 0, len + n);
          buffers[i] = buf;
        }
      },
      what_));
  return support::CatchTorch(
      [&] {
        for (size_t i = 0; i < decls.size(); ++i) {
          if (decls[i].reducer == ir::Reducer::kSum && decls[i].scatter && of == exec::FoldOf::kPartials) {
            exec::AddRows(states_[i], partials[i]);
          } else if (decls[i].reducer == ir::Reducer::kSum) {
            AddInPlace(states_[i], partials[i]);
          } else {
            states_[i] = std::move(next[i]);
            if (decls[i].reducer == ir::Reducer::kCat) cat_buffers_[i] = std::move(buffers[i]);
          }
        }
      },
      what_);
}

absl::Status StateStore::Reset() {
  Unsync();
  TALLY_ASSIGN_OR_RETURN(std::vector<at::Tensor> initial, InitialStates());
  cat_buffers_.clear();
  states_ = std::move(initial);
  return absl::OkStatus();
}

absl::Status StateStore::SetSynced(std::vector<at::Tensor> states) {
  const auto& decls = *decls_;
  if (states.size() != decls.size()) {
    return absl::InternalError(
        absl::StrCat(what_, ": a synced copy needs ", decls.size(), " states, got ", states.size()));
  }
  for (size_t i = 0; i < decls.size(); ++i) {
    if (!states[i].defined() || states[i].scalar_type() != ir::ToScalarType(decls[i].type.dtype) ||
        states[i].dim() != decls[i].type.rank()) {
      return absl::InternalError(
          absl::StrCat(what_, ": synced state '", decls[i].name, "' is not a ", decls[i].type.ToString()));
    }
  }
  synced_states_ = std::move(states);
  synced_ = true;
  return absl::OkStatus();
}

}  // namespace tally::runtime::internal
