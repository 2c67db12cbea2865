#include "engine/persist/state_file.h"

#include <algorithm>
#include <random>

#include "absl/strings/str_cat.h"
#include "engine/ir/types.h"
#include "support/status_macros.h"

namespace tally::persist {

void PutSignature(std::string& out, const dsl::Signature& sig) {
  persist::PutU64(out, sig.size());
  for (const dsl::InputSpec& in : sig) {
    persist::PutString(out, in.name);
    persist::PutString(out, ir::DTypeName(in.dtype));
    persist::PutU64(out, in.shape.size());
    for (int64_t d : in.shape) persist::PutU64(out, static_cast<uint64_t>(d));
  }
}

absl::StatusOr<dsl::Signature> ReadSignature(persist::Reader& r, absl::string_view path, absl::string_view kind) {
  auto bad = [&](absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat(kind, " ", path, ": ", what));
  };
  uint64_t n = 0;
  if (!r.U64(n) || n > 16) return bad("truncated or corrupt signature");
  dsl::Signature sig(n);
  for (dsl::InputSpec& in : sig) {
    std::string dtype;
    uint64_t rank = 0;
    if (!r.String(in.name) || !r.String(dtype) || !r.U64(rank) || rank > 16)
      return bad("truncated or corrupt signature");
    auto d = ir::ParseDType(dtype);
    if (!d.ok()) return bad(d.status().message());
    in.dtype = *d;
    in.shape.resize(rank);
    for (int64_t& dim : in.shape) {
      uint64_t v = 0;
      if (!r.U64(v) || v > (uint64_t{1} << 62)) return bad("truncated or corrupt signature");
      dim = static_cast<int64_t>(v);
    }
  }
  return sig;
}

bool SameInputs(const dsl::Signature& a, const dsl::Signature& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].name != b[i].name || a[i].dtype != b[i].dtype || a[i].shape.size() != b[i].shape.size()) return false;
    for (size_t d = 1; d < a[i].shape.size(); ++d) {
      if (a[i].shape[d] != b[i].shape[d]) return false;
    }
  }
  return true;
}

std::string StateLayout(const ir::Module& m) {
  std::string out;
  for (const ir::StateDecl& s : m.states) {
    absl::StrAppend(&out, s.name, " ", ir::DTypeName(s.type.dtype), s.type.ShapeString(), " ",
                    ir::ReducerName(s.reducer), s.group.empty() ? "" : " ", s.group, "\n");
  }
  return out;
}

std::string ShardId(absl::string_view key) {
  static const std::string* nonce = [] {
    std::random_device rd;
    return new std::string(absl::StrCat(rd(), "-", rd(), "-", rd(), "-", rd()));
  }();
  return persist::HexHash(absl::StrCat(*nonce, "/", key));
}

std::string EncodeStateFile(const StateFile& f) {
  std::string payload;
  PutSignature(payload, f.signature);
  persist::PutU64(payload, f.specs.size());
  for (const std::string& spec : f.specs) persist::PutString(payload, spec);
  persist::PutString(payload, f.layout_hash);
  persist::PutString(payload, f.states);
  persist::PutU64(payload, f.ids.size());
  for (const std::string& id : f.ids) persist::PutString(payload, id);
  return persist::Frame(payload, persist::kStateFile);
}

absl::StatusOr<StateFile> DecodeStateFile(absl::string_view bytes, absl::string_view source) {
  TALLY_ASSIGN_OR_RETURN(absl::string_view payload, persist::Unframe(bytes, source, persist::kStateFile));
  auto bad = [&](absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat("state file ", source, ": ", what));
  };
  persist::Reader r(payload);
  StateFile f;
  TALLY_ASSIGN_OR_RETURN(f.signature, ReadSignature(r, source, "state file"));
  uint64_t n = 0;
  if (!r.U64(n) || n > 4096) return bad("truncated or corrupt metric list");
  f.specs.resize(n);
  for (std::string& spec : f.specs) {
    if (!r.String(spec)) return bad("truncated or corrupt metric list");
  }
  if (!r.String(f.layout_hash) || !r.String(f.states)) {
    return bad("truncated or corrupt states");
  }
  // Ids are short and unique within a file. Read one at a time: a corrupt
  // count must not allocate before the bytes run out.
  if (!r.U64(n)) return bad("truncated or corrupt shard ids");
  for (uint64_t i = 0; i < n; ++i) {
    std::string id;
    if (!r.String(id) || id.empty() || id.size() > 64) return bad("truncated or corrupt shard ids");
    f.ids.push_back(std::move(id));
  }
  std::vector<std::string> sorted = f.ids;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) return bad("a shard id listed twice");
  if (!r.done()) return bad("bytes after the shard ids");
  return f;
}

}  // namespace tally::persist
