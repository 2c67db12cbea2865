// Reading a file the user named: regular files only, read whole.
//
// A FIFO would block the reader forever, /dev/zero (or a link to it) would
// feed it until memory runs out, and a directory reads as whatever the OS
// says; every one of them is refused up front with one line naming the path
// and what it is. The file is opened without blocking (a FIFO with no writer
// opens at once, and is then refused by its type).
#ifndef TALLY_ENGINE_IO_REGULAR_FILE_H_
#define TALLY_ENGINE_IO_REGULAR_FILE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace tally::io {

// ReadRegularFile returns the bytes of the regular file at `path` (symbolic
// links followed). NotFound when it does not exist, FailedPrecondition when
// it is not a regular file (a directory, FIFO, socket or device), and an
// errno-derived status naming the path when it cannot be read. It reads no
// more than the size fstat reported when it was opened. With max_bytes >= 0,
// a file larger than that is ResourceExhausted before anything is read.
absl::StatusOr<std::string> ReadRegularFile(const std::string& path, int64_t max_bytes = -1);

// FileKind names what `mode` (st_mode) is: "a directory", "a FIFO", ...
const char* FileKind(unsigned mode);

}  // namespace tally::io

#endif  // TALLY_ENGINE_IO_REGULAR_FILE_H_
