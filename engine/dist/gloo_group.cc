#include "engine/dist/gloo_group.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <chrono>
#include <cstdlib>
#include <exception>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/dist/c10d_compat.h"
#include "support/torch_status.h"

namespace tally::dist {
namespace {

std::chrono::milliseconds Millis(absl::Duration d) {
  return std::chrono::milliseconds(std::max<int64_t>(1, absl::ToInt64Milliseconds(d)));
}

// GlooDevice is the transport device Rendezvous::local_addr describes.
std::shared_ptr<::gloo::transport::Device> GlooDevice(const std::string& local_addr) {
  if (!local_addr.empty()) return c10d::ProcessGroupGloo::createDeviceForHostname(local_addr);
  const char* ifname = std::getenv("GLOO_SOCKET_IFNAME");
  if (ifname != nullptr && *ifname != '\0') {
    std::string first(ifname);
    first = first.substr(0, first.find(','));
    return c10d::ProcessGroupGloo::createDeviceForInterface(first);
  }
  return c10d::ProcessGroupGloo::createDefaultDevice();
}

}  // namespace

struct StoreServer::Impl {
  c10::intrusive_ptr<c10d::TCPStore> store;
};

StoreServer::StoreServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
StoreServer::~StoreServer() = default;
int StoreServer::port() const { return impl_->store->getPort(); }

absl::StatusOr<std::unique_ptr<StoreServer>> StoreServer::Start(const std::string& host, absl::Duration timeout) {
  auto impl = std::make_unique<Impl>();
  try {
    c10d::TCPStoreOptions opts = compat::TcpStoreOptions();
    opts.port = 0;  // the OS picks a free port: parallel runs never collide
    opts.isServer = true;
    opts.waitWorkers = false;
    opts.timeout = Millis(timeout);
    impl->store = c10::make_intrusive<c10d::TCPStore>(host, opts);
  } catch (const std::exception& e) {
    return absl::UnavailableError(
        absl::StrCat("starting the rendezvous store on ", host, ": ", support::FirstLine(e.what())));
  }
  return std::unique_ptr<StoreServer>(new StoreServer(std::move(impl)));
}

struct Group::Impl {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::ProcessGroup> pg;  // Gloo's, as c10d_compat.h wraps it
};

Group::Group(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Group::~Group() = default;
c10d::ProcessGroup& Group::pg() const { return *impl_->pg; }
int Group::rank() const { return impl_->pg->getRank(); }
int Group::size() const { return impl_->pg->getSize(); }

absl::StatusOr<std::unique_ptr<Group>> ConnectGloo(const Rendezvous& rv) {
  const std::string where = absl::StrCat(rv.host, ":", rv.port);
  const std::string who =
      absl::StrCat("joining the process group at ", where, " as rank ", rv.rank, " of ", rv.world_size);
  if (rv.world_size < 1 || rv.rank < 0 || rv.rank >= rv.world_size) {
    return absl::InvalidArgumentError(absl::StrCat(who, ": the rank must be in [0, world size)"));
  }
  auto impl = std::make_unique<Group::Impl>();
  std::string step = "connecting to the store";
  try {
    c10d::TCPStoreOptions opts = compat::TcpStoreOptions();
    opts.port = static_cast<std::uint16_t>(rv.port);
    opts.isServer = rv.host_store;
    opts.waitWorkers = false;
    opts.timeout = Millis(rv.timeout);
    if (rv.host_store) step = absl::StrCat("starting the store on port ", rv.port);
    impl->store = c10::make_intrusive<c10d::TCPStore>(rv.host, opts);
    if (!rv.store_prefix.empty()) impl->store = c10::make_intrusive<c10d::PrefixStore>(rv.store_prefix, impl->store);
    step = "binding Gloo";
    auto options = c10d::ProcessGroupGloo::Options::create(Millis(rv.timeout));
    options->devices.push_back(GlooDevice(rv.local_addr));
    step = "waiting for every rank";
    options->threads = 1;  // Tally issues one collective at a time
    impl->pg = compat::GlooProcessGroup(
        impl->store, c10::make_intrusive<c10d::ProcessGroupGloo>(impl->store, rv.rank, rv.world_size, options));
  } catch (const std::exception& e) {
    std::string msg = support::FirstLine(e.what());
    std::string lower = absl::AsciiStrToLower(msg);
    if (absl::StrContains(lower, "timeout") || absl::StrContains(lower, "timed out")) {
      return absl::DeadlineExceededError(absl::StrCat(who, ": ", step, ": not every rank joined within ",
                                                      absl::FormatDuration(rv.timeout),
                                                      " (a rank died or never started): ", msg));
    }
    return absl::UnavailableError(absl::StrCat(who, ": ", step, ": ", msg));
  }
  return std::unique_ptr<Group>(new Group(std::move(impl)));
}

}  // namespace tally::dist
