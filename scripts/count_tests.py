#!/usr/bin/env python3
"""Count test cases from Bazel's gtest XML and print `tests: N passed, M failed`.

Usage:
  scripts/count_tests.py [--bep FILE [--bazel-exit N]]... [--testlogs DIR]
                         [--root DIR] [--check NAME=EXIT]... [--counts NAME=P,F]...
                         [--junit FILE]... [--brief]

With --bep (a --build_event_json_file written by the `bazel test` run being
counted) only that run's results count. --bep may be repeated to count
several runs (e.g. the suite and its ThreadSanitizer run) in one total; the
i-th --bazel-exit is the exit status of the i-th run (0 when not given), and
each FAILED note then starts with its BEP file's name. A run counts shard by
shard (last attempt):
  * each test.xml: top-level <testsuites> `tests` minus failures/errors (and
    minus disabled/skipped, which are neither passed nor failed) are passed;
    failures + errors are failed. Bazel writes its own one-case XML for a test
    binary that produced none (e.g. it crashed), which then counts as 1 failed;
  * a test target that failed to build, or has no result, counts as 1 failed;
  * a shard whose status is not PASSED/FLAKY but whose XML shows no failure
    (e.g. non-zero exit after all cases passed) counts 1 more failed;
  * a non-test target that failed to build counts as 1 failed;
  * if bazel exited non-zero and no failure of that run explains it (e.g. a
    broken BUILD file, or bazel did not run at all), that counts as 1 failed.
Without --bep, --junit, --counts or --check every bazel-testlogs/**/test.xml
is counted (may include stale results from earlier runs). --root DIR reads the BEP's files under DIR (a run
inside a chroot at DIR, e.g. scripts/check-debian13's). --counts NAME=P,F[,K] adds
a suite counted elsewhere (its own `tests:` line), e.g. the CMake checks.
--junit FILE counts ctest's JUnit XML case by case (a missing or unreadable
file is 1 failed); with only --junit, no Bazel results are counted.

Skipped cases (GTEST_SKIP, disabled tests, ctest's not-run cases) are neither
passed nor failed; they are named on a line `skipped: K: <names>` printed
just before the closing line whenever K > 0, so a skip never vanishes.
--brief prints only `P F K` (passed, failed, skipped) instead, for a
caller that tabulates several runs (scripts/test's phase table).

Exit status: 1 if any failed, else 0. The last line printed is always the
`tests: N passed, M failed` line (or the --brief numbers).
"""

import argparse
import glob
import json
import os
import sys
import urllib.parse
import xml.etree.ElementTree as ET


def _int(elem, name):
    try:
        return int(float(elem.get(name, "0") or 0))
    except ValueError:
        return 0


def _skipped_cases(root):
    """Names of the cases gtest marks skipped (GTEST_SKIP) or disabled."""
    names = []
    for case in root.iter("testcase"):
        if (case.get("result") in ("skipped", "suppressed") or case.get("status") == "notrun"
                or case.find("skipped") is not None):
            names.append("%s.%s" % (case.get("classname", "?"), case.get("name", "?")))
    return names


def count_xml(path):
    """Returns (passed, failed, skipped case names) for one test.xml, or None if unreadable."""
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError):
        return None
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    skipped = sum(_int(s, "skipped") for s in suites)
    if root.tag == "testsuites" and root.get("tests") is not None:
        top = root
        tests, failures, errors = _int(top, "tests"), _int(top, "failures"), _int(top, "errors")
        disabled = _int(top, "disabled")
    else:  # e.g. Bazel's generated XML: a bare <testsuites> around <testsuite>s
        tests = sum(_int(s, "tests") for s in suites)
        failures = sum(_int(s, "failures") for s in suites)
        errors = sum(_int(s, "errors") for s in suites)
        disabled = sum(_int(s, "disabled") for s in suites)
    failed = failures + errors
    passed = max(0, tests - failed - disabled - skipped)
    names = _skipped_cases(root)
    # A count the XML gives without naming its cases (disabled ones).
    names += ["(unnamed)"] * max(0, skipped + disabled - len(names))
    return passed, failed, names


def _uri_path(uri):
    if uri.startswith("file://"):
        return urllib.parse.unquote(uri[len("file://"):])
    return uri


_ROOT = ""


def count_from_bep(bep_path):
    """Returns (passed, failed, notes) for the run recorded in a BEP JSON file."""
    test_targets = set()
    built_ok = {}
    summaries = {}
    results = {}  # (label, run, shard) -> (attempt, status, xml path)
    try:
        with open(bep_path, encoding="utf-8") as f:
            lines = f.readlines()
    except OSError:
        lines = []
    for line in lines:
        line = line.strip()
        if not line:
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        eid = event.get("id", {})
        if "targetConfigured" in eid:
            conf = event.get("configured", {})
            kind = conf.get("targetKind", "")
            if "testSize" in conf or kind.endswith("_test rule"):
                test_targets.add(eid["targetConfigured"]["label"])
        elif "targetCompleted" in eid:
            label = eid["targetCompleted"]["label"]
            ok = bool(event.get("completed", {}).get("success", False))
            built_ok[label] = built_ok.get(label, True) and ok
        elif "testSummary" in eid:
            summaries[eid["testSummary"]["label"]] = event.get("testSummary", {}).get(
                "overallStatus", "NO_STATUS")
        elif "testResult" in eid:
            rid = eid["testResult"]
            key = (rid["label"], rid.get("run", 1), rid.get("shard", 1))
            attempt = rid.get("attempt", 1)
            payload = event.get("testResult", {})
            xml = None
            for out in payload.get("testActionOutput", []):
                if out.get("name") == "test.xml":
                    xml = _ROOT + _uri_path(out.get("uri", ""))
            if key not in results or attempt >= results[key][0]:
                results[key] = (attempt, payload.get("status", "NO_STATUS"), xml)

    passed = failed = build_failures = 0
    notes = []
    skipped = []
    labels = sorted(test_targets | set(summaries) | {k[0] for k in results})
    for label in sorted(set(built_ok) - set(labels)):
        if not built_ok[label]:
            failed += 1
            build_failures += 1
            notes.append("%s: non-test target failed to build" % label)
    for label in labels:
        shards = sorted(k for k in results if k[0] == label)
        if not shards:
            failed += 1
            if built_ok.get(label) is False:
                build_failures += 1
                notes.append("%s: failed to build" % label)
            else:
                notes.append("%s: no test result" % label)
            continue
        for key in shards:
            _, status, xml = results[key]
            counted = count_xml(xml) if xml and os.path.exists(xml) else None
            where = label if len(shards) == 1 else "%s (run %d, shard %d)" % key
            if counted is None:
                failed += 1
                notes.append("%s: %s without test.xml" % (where, status))
                continue
            p, f, k = counted
            if status not in ("PASSED", "FLAKY") and f == 0:
                f = 1
            passed += p
            failed += f
            skipped += ["%s %s" % (label, name) for name in k]
            if f:
                notes.append("%s: %s (%d failed)" % (where, status, f))
    return passed, failed, build_failures, notes, skipped


def count_from_glob(testlogs):
    passed = failed = 0
    notes = []
    skipped = []
    for path in sorted(glob.glob(os.path.join(testlogs, "**", "test.xml"), recursive=True)):
        counted = count_xml(path)
        if counted is None:
            failed += 1
            notes.append("%s: unreadable" % path)
            continue
        passed += counted[0]
        failed += counted[1]
        skipped += ["%s %s" % (path, name) for name in counted[2]]
        if counted[1]:
            notes.append("%s: %d failed" % (path, counted[1]))
    return passed, failed, 0, notes, skipped


def count_junit(path):
    """Returns (passed, failed, notes, skipped names) for ctest's --output-junit XML."""
    try:
        cases = list(ET.parse(path).getroot().iter("testcase"))
    except (ET.ParseError, OSError) as e:
        return 0, 1, ["%s: unreadable (%s)" % (path, e)], []
    passed = failed = 0
    notes = []
    skipped = []
    for case in cases:
        status = case.get("status", "")
        if status in ("disabled", "notrun", "skipped") or case.find("skipped") is not None:
            skipped.append("%s %s" % (os.path.basename(path), case.get("name", "?")))
            continue
        if status == "run" and case.find("failure") is None and case.find("error") is None:
            passed += 1
        else:
            failed += 1
            notes.append("%s: %s" % (os.path.basename(path), case.get("name", "?")))
    return passed, failed, notes, skipped


def unexplained_exit(bazel_exit, failed, build_failures):
    """True if a non-zero bazel exit is not explained by the counted failures.

    Bazel exit 3: everything built, some test failed; other non-zero codes
    mean the build itself failed (or bazel did not run).
    """
    return bazel_exit != 0 and (failed == 0 or (bazel_exit != 3 and build_failures == 0))


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bep", action="append", default=[],
                        help="build event JSON file of a bazel test run (repeatable)")
    parser.add_argument("--bazel-exit", type=int, action="append", default=[],
                        help="exit status of bazel, one per --bep in the same order")
    parser.add_argument("--testlogs", default="bazel-testlogs")
    parser.add_argument("--check", action="append", default=[], metavar="NAME=EXIT",
                        help="a check run outside bazel (e.g. check_layers=0), counted "
                             "as one test that passed if EXIT is 0 (repeatable)")
    parser.add_argument("--root", default="",
                        help="directory the BEP's file paths are relative to (a chroot)")
    parser.add_argument("--counts", action="append", default=[], metavar="NAME=P,F[,K]",
                        help="a suite counted elsewhere: P passed, F failed, K skipped "
                             "(repeatable)")
    parser.add_argument("--junit", action="append", default=[], metavar="FILE",
                        help="ctest's JUnit XML, counted case by case (repeatable)")
    parser.add_argument("--brief", action="store_true",
                        help="print only `P F K` (passed, failed, skipped)")
    args = parser.parse_args(argv)
    global _ROOT
    _ROOT = args.root.rstrip("/")
    if len(args.bazel_exit) > max(1, len(args.bep)):
        parser.error("more --bazel-exit (%d) than --bep (%d)" % (len(args.bazel_exit), len(args.bep)))
    exits = args.bazel_exit + [0] * (max(1, len(args.bep)) - len(args.bazel_exit))

    runs = []  # (note prefix, counts, bazel exit)
    if args.bep:
        for bep, bazel_exit in zip(args.bep, exits):
            prefix = os.path.basename(bep) + ": " if len(args.bep) > 1 else ""
            runs.append((prefix, count_from_bep(bep), bazel_exit))
    elif not (args.junit or args.counts or args.check):
        # Nothing named: every test.xml under --testlogs.
        runs.append(("", count_from_glob(args.testlogs), exits[0]))
    for junit in args.junit:
        p, f, notes, k = count_junit(junit)
        runs.append(("", (p, f, 0, notes, k), 0))
    passed = failed = 0
    skipped = []  # names of skipped cases
    skipped_elsewhere = 0  # skipped cases of the --counts suites
    elsewhere_notes = []
    # --brief: the failures are the caller's to print (it counts them again).
    say = (lambda line: None) if args.brief else print
    for prefix, (p, f, build_failures, notes, k), bazel_exit in runs:
        if unexplained_exit(bazel_exit, f, build_failures):
            f += 1
            notes.append("bazel exited with status %d (loading/analysis/build error not "
                         "attributed to a target above)" % bazel_exit)
        passed += p
        failed += f
        skipped += [prefix + name for name in k]
        for note in notes:
            say("FAILED: " + prefix + note)
    for check in args.check:
        name, _, code = check.rpartition("=")
        if not name or not code.lstrip("-").isdigit():
            parser.error("--check wants NAME=EXIT, got %r" % check)
        if int(code) == 0:
            passed += 1
        else:
            failed += 1
            say("FAILED: %s exited with status %s" % (name, code))
    for counts in args.counts:
        name, _, pfk = counts.rpartition("=")
        fields = pfk.split(",")
        if not name or len(fields) not in (2, 3) or not all(x.isdigit() for x in fields):
            parser.error("--counts wants NAME=P,F[,K], got %r" % counts)
        passed += int(fields[0])
        failed += int(fields[1])
        if len(fields) == 3 and int(fields[2]):
            skipped_elsewhere += int(fields[2])
            elsewhere_notes.append("%s cases of %s" % (fields[2], name))
        if int(fields[1]):
            say("FAILED: %s: %s failed" % (name, fields[1]))
    n_skipped = len(skipped) + skipped_elsewhere
    if args.brief:
        print("%d %d %d" % (passed, failed, n_skipped))
        return 1 if failed else 0
    if n_skipped:
        shown = skipped[:20] + (["..."] if len(skipped) > 20 else []) + elsewhere_notes
        print("skipped: %d: %s" % (n_skipped, "; ".join(shown)))
    sys.stdout.flush()
    print("tests: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
