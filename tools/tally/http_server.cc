#include "tools/tally/http_server.h"

#include <fcntl.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace tally::tools {
namespace {

// WorkerPool runs tasks on a fixed set of threads from a bounded queue.
class WorkerPool {
 public:
  WorkerPool(int threads, size_t max_queued) : max_queued_(max_queued) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Run(); });
  }
  ~WorkerPool() { Drain(); }

  // TrySubmit queues `task`, or says no when the queue is full or closed.
  bool TrySubmit(std::function<void()> task) {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_ || queue_.size() >= max_queued_) return false;
    queue_.push_back(std::move(task));
    cv_.notify_one();
    return true;
  }

  // Drain refuses new tasks, runs the queued ones and joins the threads.
  void Drain() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closed_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }

 private:
  void Run() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return closed_ || !queue_.empty(); });
        if (queue_.empty()) return;  // closed and drained
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      task();
    }
  }

  const size_t max_queued_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;  // under mu_
  bool closed_ = false;                      // under mu_
  std::vector<std::thread> threads_;
};

// Client is a connection's socket context: whose it is and which slot it has.
struct Client {
  std::string address;
  bool reserved = false;
};

// Pending is one request in flight (MHD's per-request context).
struct Pending {
  const HttpRoute* route = nullptr;
  bool reserved = false;  // on a reserved connection: closed after the answer
  std::chrono::steady_clock::time_point started;
  std::string body;
  int64_t buffered = 0;  // bytes of the shared body budget this request holds
  bool too_large = false;
  bool queued = false;
  std::atomic<bool> answered{false};
  HttpResponse response;  // set by a worker (or early) before `answered`
};

std::string AddressOf(const sockaddr* addr) {
  if (addr == nullptr) return "?";
  char host[NI_MAXHOST] = {0};
  const socklen_t len = addr->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  if (getnameinfo(addr, len, host, sizeof(host), nullptr, 0, NI_NUMERICHOST) != 0) return "?";
  return host;
}

// Listen opens a listening TCP socket on host:port (SO_REUSEADDR only: with
// SO_REUSEPORT a second server could bind the same port and take half the
// requests).
absl::StatusOr<int> Listen(std::string host, int port) {
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = absl::StrCat(port);
  const absl::Status unavailable = absl::UnavailableError(absl::StrCat("cannot listen on ", host, ":", port));
  if (getaddrinfo(host.c_str(), service.c_str(), &hints, &found) != 0) return unavailable;
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    int yes = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, 256) != 0) {
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  if (fd < 0) return unavailable;
  return fd;
}

int BoundPort(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return -1;
  if (addr.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
  return ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
}

}  // namespace

class HttpServer::Impl {
 public:
  Impl(HttpServerOptions options, std::vector<HttpRoute> routes)
      : options_(std::move(options)),
        routes_(std::move(routes)),
        writes_(options_.write_threads, static_cast<size_t>(options_.write_threads * options_.queue_per_thread)),
        reads_(options_.read_threads, static_cast<size_t>(options_.read_threads * options_.queue_per_thread)) {}

  ~Impl() { Stop(); }

  absl::Status Start() {
    auto fd = Listen(options_.host, options_.port);
    if (!fd.ok()) return fd.status();
    listen_fd_ = *fd;
    port_ = BoundPort(listen_fd_);
    const unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME;
    daemon_ = MHD_start_daemon(flags, 0, &Impl::Accept, this, &Impl::Handle, this,                               //
                               MHD_OPTION_LISTEN_SOCKET, static_cast<MHD_socket>(listen_fd_),                    //
                               MHD_OPTION_CONNECTION_LIMIT,                                                      //
                               static_cast<unsigned>(options_.max_connections + options_.reserved_connections),  //
                               MHD_OPTION_CONNECTION_TIMEOUT, static_cast<unsigned>(options_.idle_timeout_s),    //
                               MHD_OPTION_NOTIFY_COMPLETED, &Impl::Completed, this,                              //
                               MHD_OPTION_NOTIFY_CONNECTION, &Impl::Connection, this,                            //
                               MHD_OPTION_END);
    if (daemon_ == nullptr) {
      close(listen_fd_);
      listen_fd_ = -1;
      return absl::UnavailableError(absl::StrCat("cannot serve on ", options_.host, ":", port_));
    }
    return absl::OkStatus();
  }

  int port() const { return port_; }

  void Stop() {
    if (daemon_ == nullptr) return;
    stopping_.store(true);
    const MHD_socket fd = MHD_quiesce_daemon(daemon_);
    if (fd != MHD_INVALID_SOCKET) close(fd);
    // Every suspended connection is resumed by its task before the daemon
    // stops (stopping with one suspended is undefined).
    writes_.Drain();
    reads_.Drain();
    MHD_stop_daemon(daemon_);
    daemon_ = nullptr;
  }

 private:
  static MHD_Result Handle(void* cls, MHD_Connection* c, const char* url, const char* method, const char*,
                           const char* data, size_t* size, void** context) {
    return static_cast<Impl*>(cls)->OnRequest(c, url, method, data, size, context);
  }

  MHD_Result OnRequest(MHD_Connection* c, const char* url, const char* method, const char* data, size_t* size,
                       void** context) {
    auto* p = static_cast<Pending*>(*context);
    if (p == nullptr) {  // the headers are in
      p = new Pending();
      *context = p;
      p->started = std::chrono::steady_clock::now();
      const MHD_ConnectionInfo* info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
      const Client* client = info != nullptr ? static_cast<const Client*>(info->socket_context) : nullptr;
      p->reserved = client == nullptr || client->reserved;
      if (!Admit(c, url, method, *p)) {
        p->answered.store(true);  // a body that follows is dropped
        return Answer(c, *p);
      }
      return MHD_YES;
    }
    if (*size > 0) {  // a piece of the body
      if (std::chrono::steady_clock::now() - p->started > std::chrono::seconds(options_.request_timeout_s)) {
        return MHD_NO;  // too slow: closed
      }
      const size_t n = *size;
      *size = 0;
      if (p->answered.load() || p->too_large) return MHD_YES;  // read and dropped
      if (static_cast<int64_t>(p->body.size() + n) > options_.max_body_bytes) {
        p->too_large = true;
        Release(*p);
        std::string().swap(p->body);
        return MHD_YES;
      }
      if (static_cast<int64_t>(p->body.size() + n) > p->buffered) {
        // A body of undeclared length takes budget as it grows.
        const int64_t more = std::max<int64_t>(static_cast<int64_t>(p->body.size() + n) - p->buffered, 64 << 10);
        if (!Reserve(more)) return MHD_NO;
        p->buffered += more;
      }
      p->body.append(data, n);
      return MHD_YES;
    }
    // The whole request is in (or its task resumed the connection).
    if (p->answered.load()) return Answer(c, *p);
    if (p->too_large) {
      p->response = TooLarge();
      return Answer(c, *p);
    }
    if (p->queued) return MHD_YES;
    p->queued = true;
    MHD_suspend_connection(c);
    WorkerPool& pool = p->route->kind == HttpRoute::Kind::kRead ? reads_ : writes_;
    const bool submitted = !stopping_.load() && pool.TrySubmit([this, c, p] {
      p->response = p->route->handler(p->body);
      std::string().swap(p->body);
      Release(*p);
      p->answered.store(true);
      MHD_resume_connection(c);
    });
    if (!submitted) {
      p->response = Error(503, "server busy: too many requests queued; retry later");
      p->answered.store(true);
      MHD_resume_connection(c);
    }
    return MHD_YES;
  }

  // Admit routes a request whose headers are in, or sets an early answer
  // in `p.response` and says no.
  bool Admit(MHD_Connection* c, absl::string_view url, absl::string_view method, Pending& p) {
    bool path_known = false;
    for (const HttpRoute& r : routes_) {
      if (r.path != url) continue;
      path_known = true;
      if (r.method == method) p.route = &r;
    }
    if (!options_.token.empty() && !Authorized(c)) {
      p.response = Error(401,
                         "missing or wrong token: send the header 'Authorization: Bearer <token>' "
                         "with the token of --auth-token-file");
      return false;
    }
    if (p.route == nullptr) {
      p.response = path_known ? Error(405, absl::StrCat("method ", method, " not allowed on ", url))
                              : Error(404, absl::StrCat("no route ", url));
      return false;
    }
    if (stopping_.load()) {
      p.response = Error(503, "server stopping");
      return false;
    }
    if (p.reserved && p.route->kind != HttpRoute::Kind::kRead) {
      p.response = Error(503,
                         "too many connections from this client (--max-connections-per-client) or in all "
                         "(--max-connections): this one may only read the metrics");
      return false;
    }
    const char* length = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    int64_t declared = 0;
    if (length != nullptr && absl::SimpleAtoi(length, &declared) && declared > 0) {
      if (declared > options_.max_body_bytes) {
        p.response = TooLarge();
        return false;
      }
      if (!Reserve(declared)) {
        p.response = Error(503, "server busy: too many request bodies in flight; retry later");
        return false;
      }
      p.buffered = declared;
      p.body.reserve(static_cast<size_t>(declared));
    }
    return true;
  }

  // Authorized compares the bearer token in constant time.
  bool Authorized(MHD_Connection* c) const {
    const char* header = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    absl::string_view given = header == nullptr ? "" : header;
    if (!absl::ConsumePrefix(&given, "Bearer ")) return false;
    const std::string& want = options_.token;
    unsigned diff = given.size() == want.size() ? 0 : 1;
    for (size_t i = 0; i < want.size(); ++i)
      diff |= static_cast<unsigned char>(want[i]) ^ (i < given.size() ? static_cast<unsigned char>(given[i]) : 0u);
    return diff == 0;
  }

  MHD_Result Answer(MHD_Connection* c, const Pending& p) {
    const HttpResponse& r = p.response;
    MHD_Response* resp =
        MHD_create_response_from_buffer(r.body.size(), const_cast<char*>(r.body.data()), MHD_RESPMEM_MUST_COPY);
    if (resp == nullptr) return MHD_NO;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r.content_type.c_str());
    if (p.reserved) MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    const MHD_Result queued = MHD_queue_response(c, static_cast<unsigned>(r.status), resp);
    MHD_destroy_response(resp);
    return queued;
  }

  HttpResponse Error(int status, const std::string& message) const {
    HttpResponse r;
    r.status = status;
    r.body = options_.error ? options_.error(status, message) : message;
    return r;
  }

  // TooLarge answers a body over max_body_bytes, whether its declared
  // length or the bytes that came said so.
  HttpResponse TooLarge() const {
    return Error(413, absl::StrCat("request body over ", options_.max_body_bytes,
                                   " bytes (--max-body-bytes): send smaller batches"));
  }

  bool Reserve(int64_t bytes) {
    int64_t cur = buffered_.load();
    do {
      if (cur + bytes > options_.max_buffered_bytes) return false;
    } while (!buffered_.compare_exchange_weak(cur, cur + bytes));
    return true;
  }
  void Release(Pending& p) {
    buffered_.fetch_sub(p.buffered);
    p.buffered = 0;
  }

  static void Completed(void* cls, MHD_Connection*, void** context, MHD_RequestTerminationCode) {
    auto* p = static_cast<Pending*>(*context);
    if (p == nullptr) return;
    static_cast<Impl*>(cls)->Release(*p);
    delete p;
    *context = nullptr;
  }

  // FullSlotFree tells whether a connection from `address` gets full
  // service (on the polling thread, the only one that touches the counts).
  bool FullSlotFree(const std::string& address) const {
    auto it = per_client_.find(address);
    const int mine = it == per_client_.end() ? 0 : it->second;
    return full_ < options_.max_connections && mine < options_.max_connections_per_client;
  }

  // Accept refuses a connection that would get neither a full nor a
  // reserved slot.
  static MHD_Result Accept(void* cls, const sockaddr* addr, socklen_t) {
    auto* self = static_cast<Impl*>(cls);
    if (self->FullSlotFree(AddressOf(addr)) || self->reserved_ < self->options_.reserved_connections) return MHD_YES;
    return MHD_NO;
  }

  // Connection gives a new connection a full or a reserved slot.
  static void Connection(void* cls, MHD_Connection* c, void** socket_context, MHD_ConnectionNotificationCode code) {
    auto* self = static_cast<Impl*>(cls);
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
      auto* client = new Client();
      const MHD_ConnectionInfo* info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
      client->address = AddressOf(info != nullptr ? info->client_addr : nullptr);
      if (self->FullSlotFree(client->address)) {
        ++self->per_client_[client->address];
        ++self->full_;
      } else {
        client->reserved = true;
        ++self->reserved_;
        MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT,
                                  static_cast<unsigned>(self->options_.reserved_timeout_s));
      }
      *socket_context = client;
      return;
    }
    auto* client = static_cast<Client*>(*socket_context);
    if (client == nullptr) return;
    if (client->reserved) {
      --self->reserved_;
    } else {
      --self->full_;
      auto it = self->per_client_.find(client->address);
      if (it != self->per_client_.end() && --it->second == 0) self->per_client_.erase(it);
    }
    delete client;
    *socket_context = nullptr;
  }

  const HttpServerOptions options_;
  const std::vector<HttpRoute> routes_;
  WorkerPool writes_, reads_;
  MHD_Daemon* daemon_ = nullptr;
  int listen_fd_ = -1;
  int port_ = -1;
  std::atomic<bool> stopping_{false};
  std::atomic<int64_t> buffered_{0};
  // Polling thread only:
  int full_ = 0, reserved_ = 0;
  absl::flat_hash_map<std::string, int> per_client_;
};

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpServer::~HttpServer() { Stop(); }

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(HttpServerOptions options,
                                                              std::vector<HttpRoute> routes) {
  auto impl = std::make_unique<Impl>(std::move(options), std::move(routes));
  absl::Status st = impl->Start();
  if (!st.ok()) return st;
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

int HttpServer::port() const { return impl_->port(); }
void HttpServer::Stop() {
  if (impl_) impl_->Stop();
}

}  // namespace tally::tools
