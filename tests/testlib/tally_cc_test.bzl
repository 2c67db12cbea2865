"""tally_cc_test: a cc_test with the defaults every Tally test shares."""

load("@rules_cc//cc:defs.bzl", "cc_test")

# What every test links (gtest's main) or nearly every one (gmock's matchers,
# Abseil's Status and strings).
TALLY_TEST_DEPS = [
    "@system//:absl",
    "@system//:gmock",
    "@system//:gtest_main",
]

def tally_cc_test(name, srcs = None, deps = [], size = "small", gtest_main = True, **kwargs):
    """A cc_test of Tally's suite.

    Args:
      name: the test's name.
      srcs: its sources; by default the one file `<name>.cc`.
      deps: what it uses besides TALLY_TEST_DEPS, which are always added.
      size: "small" unless given: "medium" for tests that run the built
        binaries, fork processes or sweep the registry, "large" for the
        golden corpus.
      gtest_main: link gtest's main(); False for a test that brings its own
        (//tests/testlib:test_device_main).
      **kwargs: every other cc_test attribute, passed through unchanged
        (tags such as "tsan", shard_count, data, timeout, args, ...).
    """
    cc_test(
        name = name,
        srcs = srcs if srcs != None else [name + ".cc"],
        size = size,
        deps = deps + [
            d
            for d in TALLY_TEST_DEPS
            if d not in deps and (gtest_main or d != "@system//:gtest_main")
        ],
        **kwargs
    )
