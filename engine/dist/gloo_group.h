// Gloo process groups on loopback, joined through a c10d TCPStore.
//
// A StoreServer is the rendezvous point: a TCPStore server on an
// OS-assigned port (so parallel runs never collide), usually in a parent
// process that forks the ranks (engine/dist/launch.h). Each rank joins with
// ConnectGloo, which connects to the store and builds a ProcessGroupGloo whose
// transport is bound to `local_addr`. Ranks started by someone else (torchrun,
// Slurm, by hand on several hosts) meet as torch.distributed's env://
// does: rank 0 hosts the store at MASTER_ADDR:MASTER_PORT (`host_store`). Both are bounded by a timeout: a rank
// that never joins gives every other rank a DeadlineExceeded status, and a
// collective that waits on a dead rank fails (engine/dist/sync.h).
//
// The header is free of c10d: callers that only pass the group to dist::Sync
// need none of its headers.
#ifndef TALLY_ENGINE_DIST_GLOO_GROUP_H_
#define TALLY_ENGINE_DIST_GLOO_GROUP_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace c10d {
class ProcessGroup;
}  // namespace c10d

namespace tally::dist {

// Rendezvous says where and as what a rank joins.
struct Rendezvous {
  std::string host = "127.0.0.1";  // the store's host (MASTER_ADDR)
  int port = 0;                    // the store's port (StoreServer::port, MASTER_PORT)
  // host_store: this rank starts the store's server at host:port (rank 0 of
  // ranks that no launcher of ours started).
  bool host_store = false;
  // store_prefix, when not empty, prefixes every key this group writes: a
  // store shared with others (torchrun's agent store, whose ranks use
  // "/worker/attempt_<restart count>").
  std::string store_prefix;
  // local_addr is the address this rank's Gloo transport binds to; empty:
  // the interface GLOO_SOCKET_IFNAME names (the first of a comma list), else
  // the address this host's name resolves to (c10d's default device).
  std::string local_addr = "127.0.0.1";
  int rank = 0;
  int world_size = 1;
  // timeout bounds joining (every rank must arrive within it) and every
  // collective of the group.
  absl::Duration timeout = absl::Seconds(30);
};

// StoreServer owns a TCPStore server.
class StoreServer {
 public:
  // Start listens on `host` at an OS-assigned port.
  static absl::StatusOr<std::unique_ptr<StoreServer>> Start(const std::string& host, absl::Duration timeout);
  ~StoreServer();
  int port() const;

 private:
  struct Impl;
  explicit StoreServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Group is one rank's membership of a process group (the store client and
// the ProcessGroupGloo).
class Group {
 public:
  ~Group();
  c10d::ProcessGroup& pg() const;
  int rank() const;
  int size() const;

 private:
  struct Impl;
  explicit Group(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  friend absl::StatusOr<std::unique_ptr<Group>> ConnectGloo(const Rendezvous& rendezvous);
};

// ConnectGloo joins the group described by `rendezvous`. It returns when
// every rank has joined, or DeadlineExceeded/Unavailable after the timeout
// naming the store's address.
absl::StatusOr<std::unique_ptr<Group>> ConnectGloo(const Rendezvous& rendezvous);

}  // namespace tally::dist

#endif  // TALLY_ENGINE_DIST_GLOO_GROUP_H_
