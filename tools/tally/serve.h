// `tally serve`: an HTTP server (libmicrohttpd, http_server.h) around one tally::Session
// (docs/cli.md, "serve").
//
// The first accepted update fixes the input signature (dtypes and trailing
// dims, as `tally eval` takes them from its files, or dtypes declared with
// --dtype) and compiles the session; later requests are cast to it when
// nothing is lost. A reset lets the next update fix it again. With
// --checkpoint FILE an existing checkpoint is restored at start-up (its
// signature included) and POST /v1/checkpoint writes it atomically. Bad
// requests get 400 and `{"error": "<the one line eval would print>"}`, and
// change nothing: the session runs with reject_invalid_values.
#ifndef TALLY_TOOLS_TALLY_SERVE_H_
#define TALLY_TOOLS_TALLY_SERVE_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "engine/exec/plan_runner.h"
#include "engine/ir/types.h"

namespace tally::tools {

// ServeOptions mirror the command line.
struct ServeOptions {
  std::vector<std::string> specs;
  std::string host = "127.0.0.1";
  int port = 8080;         // 0: any free port
  std::string checkpoint;  // empty: POST /v1/checkpoint is an error
  ir::Device device;
  exec::Backend backend = exec::Backend::kEager;
  // max_body_bytes bounds a request body: a longer one is answered 413
  // before it is read (parsing JSON takes several times the body's size).
  int64_t max_body_bytes = int64_t{16} << 20;
  // max_state_bytes is the state (and temporaries) budget, as eval's flag;
  // 0: half the machine's memory.
  int64_t max_state_bytes = 0;
  // dtypes declares inputs' dtypes (--dtype NAME=DTYPE): the signature the
  // first update fixes takes them, and data is cast to them when that loses
  // nothing. Undeclared inputs take the first update's dtypes.
  std::map<std::string, ir::DType> dtypes;
  // Connections and threads (http_server.h).
  int threads = 4;  // update workers: one shard and one scratch program each
  int max_connections = 512;
  int max_connections_per_client = 64;
  int idle_timeout_s = 10;
  int request_timeout_s = 30;
  // auth_token_file holds a token every request must bear
  // (`Authorization: Bearer <token>`); empty: none.
  std::string auth_token_file;
};

// IsLoopback tells a host that only this machine reaches (127.0.0.0/8, ::1,
// localhost); Serve warns on stderr when it binds any other.
bool IsLoopback(const std::string& host);

// Serve runs until SIGINT or SIGTERM (then OK) or until it cannot start.
// Its first stdout line is `listening on HOST:PORT`.
absl::Status Serve(const ServeOptions& options);

}  // namespace tally::tools

#endif  // TALLY_TOOLS_TALLY_SERVE_H_
