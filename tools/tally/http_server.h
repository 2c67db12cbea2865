// HttpServer: the event-driven HTTP front of `tally serve`, on libmicrohttpd.
//
// One polling thread (epoll) does all socket I/O, so a connection that is
// slow or idle costs a file descriptor and a few KB, never a thread. A
// complete request is handed to a worker pool by its route's kind: writes
// (updates, reset, checkpoint) to `write_threads` workers, reads (metrics)
// to `read_threads` workers of their own, so a scrape never queues behind
// updates. The connection is suspended meanwhile and resumed with the
// answer.
//
// Bounds, each answered rather than waited on:
// - connections: `max_connections` in all and `max_connections_per_client`
//   per client address get full service; past either, a connection still
//   gets one of `reserved_connections` read-only slots (a GET of a read
//   route, then closed; other requests 503) with a short timeout, so a
//   scrape gets through even when one client holds every normal slot;
//   past those the connection is refused;
// - time: a connection idle for `idle_timeout_s` (keep-alive, or a client
//   sending nothing) is closed; a body still arriving `request_timeout_s`
//   after its headers is cut off;
// - memory: a body over `max_body_bytes` is answered 413 (before it is
//   read when it declares its length); bodies buffered at once are bounded
//   by `max_buffered_bytes` (503 past it); queued requests by
//   `queue_per_thread` per worker (503 past it).
// With a token, a request without it is answered 401 before anything else.
#ifndef TALLY_TOOLS_TALLY_HTTP_SERVER_H_
#define TALLY_TOOLS_TALLY_HTTP_SERVER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tally::tools {

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
};

// A Route answers `method path` from the request body on a worker thread.
struct HttpRoute {
  enum class Kind { kRead, kWrite };
  std::string method;
  std::string path;
  Kind kind = Kind::kWrite;
  std::function<HttpResponse(const std::string& body)> handler;
};

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port
  int write_threads = 4;
  int read_threads = 2;
  int queue_per_thread = 16;
  int max_connections = 512;
  int max_connections_per_client = 64;
  int reserved_connections = 32;
  int reserved_timeout_s = 2;
  int idle_timeout_s = 10;
  int request_timeout_s = 30;
  int64_t max_body_bytes = int64_t{16} << 20;
  int64_t max_buffered_bytes = int64_t{128} << 20;
  // token, when set, must come with every request as
  // `Authorization: Bearer <token>`; others are answered 401.
  std::string token;
  // error renders an error answer's body (status, one line).
  std::function<std::string(int status, const std::string& message)> error;
};

class HttpServer {
 public:
  // Start binds `options.host:port` and serves `routes` until Stop.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(HttpServerOptions options, std::vector<HttpRoute> routes);
  ~HttpServer();  // Stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // port is the bound port (the one picked for port 0).
  int port() const;
  // Stop stops accepting, answers what was already queued, and closes.
  void Stop();

  class Impl;

 private:
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tally::tools

#endif  // TALLY_TOOLS_TALLY_HTTP_SERVER_H_
