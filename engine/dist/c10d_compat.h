// c10d across LibTorch releases (1.13 on Debian 12, 2.6 on Debian 13). In 1.13 ProcessGroupGloo is a
// c10d::ProcessGroup; from 2.0 it is a c10d::Backend, and a ProcessGroup
// wraps one backend per device type. Sync takes a ProcessGroup on both, so a
// caller's group from either release passes straight through.
#ifndef TALLY_ENGINE_DIST_C10D_COMPAT_H_
#define TALLY_ENGINE_DIST_C10D_COMPAT_H_

#include <torch/version.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

namespace tally::dist::compat {

// TCPStore options with the socket backend every release has: from 2.4
// TCPStore defaults to libuv, which Debian's LibTorch is built without.
inline c10d::TCPStoreOptions TcpStoreOptions() {
  c10d::TCPStoreOptions opts;
#if TORCH_VERSION_MAJOR >= 2
  opts.useLibUV = false;
#endif
  return opts;
}

// A ProcessGroup whose collectives run on `gloo`, for CPU and CUDA tensors
// alike (Gloo reduces CUDA tensors too: states synced where they live).
inline c10::intrusive_ptr<c10d::ProcessGroup> GlooProcessGroup(const c10::intrusive_ptr<c10d::Store>& store,
                                                               c10::intrusive_ptr<c10d::ProcessGroupGloo> gloo) {
#if TORCH_VERSION_MAJOR >= 2
  auto group = c10::make_intrusive<c10d::ProcessGroup>(store, gloo->getRank(), gloo->getSize());
  group->setDefaultBackend(c10d::ProcessGroup::BackendType::GLOO);
  group->setBackend(c10::DeviceType::CPU, c10d::ProcessGroup::BackendType::GLOO, gloo);
  group->setBackend(c10::DeviceType::CUDA, c10d::ProcessGroup::BackendType::GLOO, gloo);
  return group;
#else
  (void)store;
  return gloo;
#endif
}

}  // namespace tally::dist::compat

#endif  // TALLY_ENGINE_DIST_C10D_COMPAT_H_
