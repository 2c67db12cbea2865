#include "engine/runtime/internal/state_codec.h"

#include <ATen/ATen.h>

#include <cstring>
#include <limits>
#include <stdexcept>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/ir/aten_types.h"
#include "support/status_macros.h"
#include "support/torch_status.h"

namespace tally::runtime::internal {

absl::StatusOr<std::string> EncodeStates(const std::vector<ir::StateDecl>& decls, const std::vector<at::Tensor>& states,
                                         absl::string_view what) {
  std::string out = "tally-state 1\n";
  absl::Status st = support::CatchTorch(
      [&] {
        for (size_t i = 0; i < decls.size(); ++i) {
          at::Tensor t = states[i].to(at::kCPU).contiguous();
          absl::StrAppend(&out, decls[i].name, " ", ir::DTypeName(decls[i].type.dtype), " ", t.dim());
          for (int64_t d : t.sizes()) absl::StrAppend(&out, " ", d);
          size_t nbytes = t.numel() * t.element_size();
          absl::StrAppend(&out, " ", nbytes, "\n");
          out.append(static_cast<const char*>(t.data_ptr()), nbytes);
        }
      },
      absl::StrCat(what, ": save state"));
  TALLY_RETURN_IF_ERROR(st);
  return out;
}

absl::StatusOr<std::vector<at::Tensor>> DecodeStates(const std::vector<ir::StateDecl>& decls, absl::string_view bytes,
                                                     const ir::Device& device, absl::string_view what) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": load state: ", why));
  };
  absl::string_view rest = bytes;
  auto next_line = [&](std::string& line) {
    size_t nl = rest.find('\n');
    if (nl == absl::string_view::npos) return false;
    line = std::string(rest.substr(0, nl));
    rest.remove_prefix(nl + 1);
    return true;
  };
  std::string line;
  if (!next_line(line) || line != "tally-state 1") return bad("not a tally state file");
  std::vector<at::Tensor> loaded;
  TALLY_ASSIGN_OR_RETURN(c10::Device dev, ir::ToDevice(device));
  for (const auto& s : decls) {
    if (!next_line(line)) return bad(absl::StrCat("missing state '", s.name, "'"));
    std::vector<std::string> f = absl::StrSplit(line, ' ');
    int64_t rank = 0, nbytes = 0;
    if (f.size() < 4 || f[0] != s.name || f[1] != ir::DTypeName(s.type.dtype) || !absl::SimpleAtoi(f[2], &rank) ||
        rank != s.type.rank() || static_cast<int64_t>(f.size()) != 4 + rank || !absl::SimpleAtoi(f.back(), &nbytes)) {
      return bad(absl::StrCat("state '", s.name, "' does not match: '", line, "'"));
    }
    std::vector<int64_t> sizes;
    int64_t numel = 1;
    for (int64_t d = 0; d < rank; ++d) {
      int64_t n;
      if (!absl::SimpleAtoi(f[3 + d], &n) || n < 0) return bad("bad size");
      if (!s.type.shape[d].is_symbolic() && n != s.type.shape[d].size)
        return bad(absl::StrCat("state '", s.name, "' has the wrong shape"));
      sizes.push_back(n);
      if (n != 0 && numel > std::numeric_limits<int64_t>::max() / n) return bad("bad size");
      numel *= n;
    }
    if (static_cast<int64_t>(rest.size()) < nbytes) return bad("truncated");
    // Checked before allocating: a corrupt size must not allocate the tensor
    // it names.
    const int64_t item = static_cast<int64_t>(c10::elementSize(ir::ToScalarType(s.type.dtype)));
    if (numel > std::numeric_limits<int64_t>::max() / item || numel * item != nbytes) {
      return bad(absl::StrCat("state '", s.name, "': ", nbytes, " bytes for ", numel, " elements"));
    }
    // Kernels read bool states as C++ bool: any byte but 0 and 1 is UB there.
    if (s.type.dtype == ir::DType::kBool &&
        rest.substr(0, nbytes).find_first_not_of(absl::string_view("\0\1", 2)) != absl::string_view::npos) {
      return bad(absl::StrCat("state '", s.name, "': a bool byte is not 0 or 1"));
    }
    at::Tensor t;
    absl::Status st = support::CatchTorch(
        [&] {
          t = at::empty(sizes, at::TensorOptions().dtype(ir::ToScalarType(s.type.dtype)));
          if (static_cast<int64_t>(t.numel() * t.element_size()) != nbytes)
            throw std::runtime_error("byte count mismatch");
          if (nbytes > 0) std::memcpy(t.data_ptr(), rest.data(), nbytes);  // an empty tensor may have no data
          t = t.to(dev);
        },
        absl::StrCat(what, ": load state '", s.name, "'"));
    TALLY_RETURN_IF_ERROR(st);
    rest.remove_prefix(nbytes);
    loaded.push_back(t);
  }
  if (!rest.empty()) {
    return bad(absl::StrCat(rest.size(), " bytes after the last state (saved by a different program?)"));
  }
  return loaded;
}

}  // namespace tally::runtime::internal
