// A stand-in for torchrun's elastic agent in tests: serves a c10d TCPStore
// (dist::StoreServer) on the address given, prints `listening on
// HOST:PORT`, and waits to be killed. Ranks started with
// TORCHELASTIC_USE_AGENT_STORE=True meet through it, as under torchrun.
#include <unistd.h>

#include <iostream>

#include "absl/time/time.h"
#include "engine/dist/gloo_group.h"

int main(int argc, char** argv) {
  const std::string host = argc > 1 ? argv[1] : "127.0.0.1";
  auto server = tally::dist::StoreServer::Start(host, absl::Seconds(60));
  if (!server.ok()) {
    std::cerr << server.status() << "\n";
    return 1;
  }
  std::cout << "listening on " << host << ":" << (*server)->port() << std::endl;
  while (true) pause();
}
