"""@system: the Debian packages Tally builds on, as link options.

Headers are in /usr/include (a builtin include directory of the toolchain),
so the repository is only BUILD.system with Abseil's link options filled in.
Abseil splits into many shared libraries whose set changes between releases
(20220623 on Debian 12, 20240722 on Debian 13 moved string_view's operator<<
into libabsl_string_view, logging into absl_log_*, ...): every installed
libabsl_*.so is named, so no release's list has to be kept here, except the
command-line flag libraries (flags_*, log_flags), which Tally never uses and
whose static flag registration crashes 20240722 binaries that load them
unasked, and the failure signal handler (it installs signal handlers). Not
--as-needed: a test links Tally's libraries as shared objects, and ld then
drops an Abseil library that only those objects (not the test's own) use.
"""

_UNUSED = ["absl_log_flags", "absl_failure_signal_handler"]

def _list(opts):
    return ",\n        ".join(["\"%s\"" % o for o in opts])

def _system_repository_impl(rctx):
    found = rctx.execute(["sh", "-c", "ls /usr/lib/*/libabsl_*.so /usr/lib/libabsl_*.so 2>/dev/null"])
    names = sorted({
        path.rpartition("/")[2][len("lib"):-len(".so")]: True
        for path in found.stdout.split("\n")
        if path.endswith(".so")
    }.keys())
    names = [n for n in names if not n.startswith("absl_flags_") and n not in _UNUSED]
    if not names:
        fail("@system: no /usr/lib/**/libabsl_*.so (Debian package libabsl-dev; scripts/setup installs it)")
    linkopts = ["-l" + n for n in names]
    # LibTorch built with glog (C10_USE_GLOG) logs through it; otherwise
    # there is no glog to link.
    macros = rctx.execute(["cat", "/usr/include/c10/macros/cmake_macros.h"]).stdout
    glog = ["-lglog"] if "#define C10_USE_GLOG" in macros else []
    # The Python extension (//python): the headers of the system Python that
    # runs `import tally` (Debian's python3-dev; python3-torch's LibTorch is
    # the one the build links), linked into the repository so that a target
    # can name them. None (a root without Python): //python is not built.
    py = rctx.execute(["/usr/bin/python3", "-c", "import sysconfig; print(sysconfig.get_paths()['include'])"])
    py_include = py.stdout.strip() if py.return_code == 0 else ""
    if py_include and rctx.path(py_include + "/Python.h").exists:
        rctx.symlink(py_include, "python_include")
    else:
        rctx.file("python_include/README", "no Python headers on this machine\n")
    rctx.template("BUILD.bazel", rctx.attr.build_file, {
        "\"%{ABSL_LINKOPTS}\"": _list(linkopts),
        "\"%{GLOG_LINKOPTS}\"": _list(glog),
    })

system_repository = repository_rule(
    implementation = _system_repository_impl,
    attrs = {"build_file": attr.label(allow_single_file = True)},
    # Re-read on every fetch: the libraries are the machine's, not a download.
    local = True,
)
