// Meta (shape-only) kernels for the ATen ops Tally's eager kernels call that
// Debian's LibTorch 1.13 lacks on the `meta` device.
//
// Meta tensors are the oracle for sync-freedom: an update plan that runs on
// `meta` inputs cannot read a value on the host. In LibTorch 1.13 a few plain
// ATen ops (where, logical_and/or/xor/not, abs, isnan, index_select,
// searchsorted, bucketize) have no Meta kernel at all, so plans using them
// failed on meta for a reason that has nothing to do with syncs. This file
// supplies shape functions for exactly those ops (only where the running
// LibTorch has none), so the kernels in kernels.cc run unchanged on meta
// while `.item()`, `nonzero` and the like still fail there.
#ifndef TALLY_OPS_META_KERNELS_H_
#define TALLY_OPS_META_KERNELS_H_

namespace tally::ops {

// EnsureMetaKernels registers the missing Meta kernels once; later calls do
// nothing. FindKernel calls it before handing out any kernel.
void EnsureMetaKernels();

}  // namespace tally::ops

#endif  // TALLY_OPS_META_KERNELS_H_
