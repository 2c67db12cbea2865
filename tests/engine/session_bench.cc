// session_bench: updates per second of tally::Session from 1..N request
// threads (each thread feeds its own pre-made batches; no reads during the
// timed part), against one bare Program fed from one thread.
//
//   bazel run //tests/engine:session_bench -- [updates_per_thread] [batch_rows] [threads...]
//   (defaults: 20000 updates of 4 rows; 1 2 8 threads)
#include <ATen/ATen.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "api/tally.h"
#include "engine/runtime/compiler.h"

namespace {

using tally::NamedTensors;

NamedTensors Rows(int64_t n, int64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  return {{"preds", at::randint(0, 3, {n}, gen, at::kLong)}, {"target", at::randint(0, 3, {n}, gen, at::kLong)}};
}

double Seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  const int updates = argc > 1 ? std::atoi(argv[1]) : 20000;
  const int batch = argc > 2 ? std::atoi(argv[2]) : 4;
  std::vector<int> thread_counts;
  for (int i = 3; i < argc; ++i) thread_counts.push_back(std::atoi(argv[i]));
  if (thread_counts.empty()) thread_counts = {1, 2, 8};
  const std::vector<std::string> specs = {"multiclass_accuracy(num_classes=3, average=none)",
                                          "multiclass_confusion_matrix(num_classes=3)",
                                          "multiclass_f1_score(num_classes=3, average=macro)"};
  auto sig = tally::SignatureOf(Rows(batch, 0));
  int max_threads = 0;
  for (int t : thread_counts) max_threads = std::max(max_threads, t);
  std::vector<std::vector<NamedTensors>> batches(max_threads);
  for (int t = 0; t < max_threads; ++t) {
    NamedTensors rows = Rows(int64_t{updates} * batch, t + 1);
    for (int u = 0; u < updates; ++u) {
      NamedTensors b;
      for (const auto& [n, x] : rows) b.emplace_back(n, x.narrow(0, int64_t{u} * batch, batch));
      batches[t].push_back(std::move(b));
    }
  }
  std::printf(
      "collection: %zu classification metrics (one confusion matrix), %d rows per update, %u hardware threads\n",
      specs.size(), batch, std::thread::hardware_concurrency());
  {
    auto entries = tally::BuildEntries(specs, *sig, {});
    auto program = tally::Compile(*entries, {});
    auto t0 = std::chrono::steady_clock::now();
    for (const auto& b : batches[0]) (void)(*program)->Update(b);
    double s = Seconds(t0);
    std::printf("bare Program, 1 thread: %.0f updates/s (%.2f us/update)\n", updates / s, 1e6 * s / updates);
  }
  for (int micro : {0, 64})
    for (int threads : thread_counts) {
      tally::SessionOptions options;
      options.micro_batching.max_rows = micro;
      auto session = tally::CreateDefaultSession(specs, *sig, options);
      if (!session.ok()) {
        std::fprintf(stderr, "%s\n", session.status().ToString().c_str());
        return 1;
      }
      auto t0 = std::chrono::steady_clock::now();
      std::vector<std::thread> pool;
      for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
          for (const auto& b : batches[t]) (void)(*session)->Update(b);
        });
      }
      for (auto& th : pool) th.join();
      double s = Seconds(t0);
      auto counters = (*session)->Counters();
      const double total = double(threads) * updates;
      std::printf("Session%s, %d thread(s): %.0f updates/s (%.2f us/update per thread), counted %lld updates\n",
                  micro ? " (micro-batching, max_rows=64)" : "", threads, total / s, 1e6 * s * threads / total,
                  static_cast<long long>(counters->updates));
    }
  return 0;
}
