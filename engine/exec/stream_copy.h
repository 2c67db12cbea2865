// StreamCopy: memcpy for appends that nothing reads soon.
//
// A cat state's new rows are read again only at Compute, so the copy into its
// buffer uses non-temporal stores where the CPU has them (x86-64 SSE2): they
// do not read each destination line before writing it, and they leave the
// caller's working set in cache. Small copies use memcpy.
#ifndef TALLY_ENGINE_EXEC_STREAM_COPY_H_
#define TALLY_ENGINE_EXEC_STREAM_COPY_H_

#include <cstddef>

namespace tally::exec {

void StreamCopy(void* dst, const void* src, size_t bytes);

}  // namespace tally::exec

#endif  // TALLY_ENGINE_EXEC_STREAM_COPY_H_
