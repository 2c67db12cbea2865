#include "engine/persist/checkpoint_format.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include <climits>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "engine/io/regular_file.h"
#include "support/hash.h"

namespace tally::persist {
namespace {

constexpr size_t kHeader = 8 + 4 + 8;
constexpr size_t kTrailer = 8;

void PutLE(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t GetLE(absl::string_view s, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(s[i])) << (8 * i);
  return v;
}

absl::Status Errno(absl::string_view kind, absl::string_view what, const std::string& path) {
  return absl::InternalError(absl::StrCat(kind, " ", path, ": ", what, ": ", std::strerror(errno)));
}

std::atomic<uint64_t> g_temp_counter{0};

}  // namespace

std::string HexHash(absl::string_view bytes) {
  return absl::StrCat(absl::Hex(support::Fnv1a64(bytes), absl::kZeroPad16));
}

void PutU64(std::string& out, uint64_t v) { PutLE(out, v, 8); }

void PutString(std::string& out, absl::string_view s) {
  PutU64(out, s.size());
  out.append(s.data(), s.size());
}

bool Reader::U64(uint64_t& v) {
  if (rest_.size() < 8) return false;
  v = GetLE(rest_, 8);
  rest_.remove_prefix(8);
  return true;
}

bool Reader::String(std::string& s) {
  uint64_t n = 0;
  if (!U64(n) || n > rest_.size()) return false;
  s = std::string(rest_.substr(0, n));
  rest_.remove_prefix(n);
  return true;
}

std::string Frame(absl::string_view payload, const Framing& framing) {
  std::string out(framing.magic);
  PutLE(out, framing.version, 4);
  PutU64(out, payload.size());
  out.append(payload.data(), payload.size());
  PutU64(out, support::Fnv1a64(out));
  return out;
}

absl::StatusOr<absl::string_view> Unframe(absl::string_view file, absl::string_view path, const Framing& framing) {
  auto bad = [&](absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat(framing.what, " ", path, ": ", what));
  };
  if (file.size() < 8 || file.substr(0, 8) != framing.magic) {
    for (const Framing* other : {&kCheckpoint, &kStateFile}) {
      if (other->magic != framing.magic && file.substr(0, 8) == other->magic) {
        return bad(absl::StrCat("a Tally ", other->what, ", not a ", framing.what));
      }
    }
    return bad(absl::StrCat("not a Tally ", framing.what, " (bad magic)"));
  }
  if (file.size() < kHeader + kTrailer) return bad(absl::StrCat("truncated (", file.size(), " bytes)"));
  const uint64_t version = GetLE(file.substr(8), 4);
  if (version != framing.version) {
    return bad(absl::StrCat("version ", version, " (this build reads ", framing.version, ")"));
  }
  const uint64_t size = GetLE(file.substr(12), 8);
  if (size != file.size() - kHeader - kTrailer) {
    return bad(absl::StrCat("truncated or padded: the header promises ", size, " payload bytes, the file has ",
                            file.size() - kHeader - kTrailer));
  }
  const uint64_t want = GetLE(file.substr(file.size() - kTrailer), 8);
  if (support::Fnv1a64(file.substr(0, file.size() - kTrailer)) != want) return bad("checksum mismatch (corrupt file)");
  return file.substr(kHeader, size);
}

absl::StatusOr<std::string> WriteTarget(const std::string& path, absl::string_view kind) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return path;  // a first write
    return Errno(kind, "lstat", path);
  }
  std::string target = path;
  if (S_ISLNK(st.st_mode)) {
    char resolved[PATH_MAX];
    if (::realpath(path.c_str(), resolved) == nullptr || ::stat(resolved, &st) != 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          kind, " ", path, ": a symbolic link whose target cannot be reached (", std::strerror(errno), ")"));
    }
    target = resolved;
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(kind, " ", path, ": ", target == path ? "is " : "points to ",
                                                      io::FileKind(st.st_mode), ", not a regular file"));
  }
  return target;
}

absl::Status WriteFileAtomically(const std::string& link_or_path, absl::string_view bytes, absl::string_view kind) {
  absl::StatusOr<std::string> target = WriteTarget(link_or_path, kind);
  if (!target.ok()) return target.status();
  const std::string& path = *target;
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  const std::string tmp = absl::StrCat(path, ".tmp.", getpid(), ".", g_temp_counter.fetch_add(1));
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Errno(kind, "creating a temporary file", tmp);
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      absl::Status st = Errno(kind, "write", tmp);
      ::close(fd);
      ::unlink(tmp.c_str());
      return st;
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    absl::Status st = Errno(kind, "fsync", tmp);
    ::close(fd);
    ::unlink(tmp.c_str());
    return st;
  }
  if (::close(fd) != 0) {
    absl::Status st = Errno(kind, "close", tmp);
    ::unlink(tmp.c_str());
    return st;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    absl::Status st = Errno(kind, "rename", path);
    ::unlink(tmp.c_str());
    return st;
  }
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return Errno(kind, "opening the directory", dir);
  const int rc = ::fsync(dfd);
  ::close(dfd);
  if (rc != 0) return Errno(kind, "fsync of the directory", dir);
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadFile(const std::string& path, absl::string_view kind) {
  absl::StatusOr<std::string> bytes = io::ReadRegularFile(path);
  if (!bytes.ok()) return absl::Status(bytes.status().code(), absl::StrCat(kind, " ", bytes.status().message()));
  return bytes;
}

}  // namespace tally::persist
