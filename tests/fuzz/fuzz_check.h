// FuzzCheck: a property a fuzz target asserts beyond "no crash". A failure
// prints what was expected and aborts, which libFuzzer reports as a crash
// (and saves the input) and which fails fuzz_corpus_test.
#ifndef TALLY_TESTS_FUZZ_FUZZ_CHECK_H_
#define TALLY_TESTS_FUZZ_FUZZ_CHECK_H_

#include <cstdio>
#include <cstdlib>
#include <string>

namespace tally::fuzz {

inline void FuzzCheck(bool ok, const std::string& what) {
  if (ok) return;
  std::fprintf(stderr, "fuzz check failed: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace tally::fuzz

#endif  // TALLY_TESTS_FUZZ_FUZZ_CHECK_H_
