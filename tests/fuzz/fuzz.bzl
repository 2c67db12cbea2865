"""tally_fuzzer: a libFuzzer binary for one function of targets.h, and the
sh_test that fuzzes it for a bounded time from its seed corpus."""

load("@rules_cc//cc:defs.bzl", "cc_binary")

# Fuzzers need clang's libFuzzer: they build only under --config=asan (in
# its own output base, see .bazelrc), so they are manual and `bazel test
# //...` in the regular gcc build skips them; scripts/test names them.
def tally_fuzzer(name, function):
    """name: the target directory under corpus/ and regressions/;
    function: its function in targets.h."""
    cc_binary(
        name = name + "_fuzzer",
        testonly = True,
        srcs = ["fuzz_entry.cc"],
        local_defines = ["TALLY_FUZZ_TARGET=" + function],
        linkopts = ["-fsanitize=fuzzer"],
        tags = ["manual"],
        deps = [
            ":targets",
            "@system//:absl",
        ],
    )
    native.sh_test(
        name = name + "_fuzz_test",
        size = "medium",
        srcs = ["run_fuzzer.sh"],
        args = [
            "$(rootpath :%s_fuzzer)" % name,
            "tests/fuzz/corpus/" + name,
            "tests/fuzz/regressions/" + name,
        ],
        data = [":%s_fuzzer" % name] + native.glob([
            "corpus/%s/*" % name,
            "regressions/%s/*" % name,
        ]),
        # external: never cached, so every run fuzzes anew (a cached result
        # would reprint an old "N runs in S s" and fuzz nothing).
        tags = [
            "external",
            "fuzz",
            "manual",
        ],
    )
