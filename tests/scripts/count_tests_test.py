"""Verifies scripts/count_tests.py: skipped cases are named and counted, never
passed; a failed or missing run is a failure; --brief gives the numbers."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.getcwd(), "scripts", "count_tests.py")

# gtest's XML for 3 cases: one passed, one failed, one GTEST_SKIP.
GTEST_XML = """<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="3" failures="1" disabled="0" errors="0" name="AllTests">
  <testsuite name="S" tests="3" failures="1" disabled="0" skipped="1" errors="0">
    <testcase name="Ok" status="run" result="completed" classname="S" />
    <testcase name="Bad" status="run" result="completed" classname="S">
      <failure message="x" type=""/>
    </testcase>
    <testcase name="Skipped" status="run" result="skipped" classname="S">
      <skipped message="no python"/>
    </testcase>
  </testsuite>
</testsuites>
"""


def run(*args):
    p = subprocess.run([sys.executable, SCRIPT] + list(args), capture_output=True, text=True)
    return p.returncode, p.stdout.strip().splitlines()


class CountTestsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def bep(self, status="FAILED", xml=GTEST_XML, label="//t:a"):
        xml_path = os.path.join(self.dir, "test.xml")
        with open(xml_path, "w", encoding="utf-8") as f:
            f.write(xml)
        events = [
            {"id": {"targetConfigured": {"label": label}},
             "configured": {"targetKind": "cc_test rule", "testSize": "SMALL"}},
            {"id": {"testResult": {"label": label, "run": 1, "shard": 1, "attempt": 1}},
             "testResult": {"status": status,
                            "testActionOutput": [{"name": "test.xml", "uri": "file://" + xml_path}]}},
        ]
        path = os.path.join(self.dir, "run.bep.json")
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(json.dumps(e) for e in events) + "\n")
        return path

    def test_skipped_case_is_named_and_not_passed(self):
        rc, out = run("--bep", self.bep(), "--bazel-exit", "3")
        self.assertEqual(rc, 1)
        self.assertEqual(out[-1], "tests: 1 passed, 1 failed")
        self.assertEqual(out[-2], "skipped: 1: //t:a S.Skipped")

    def test_brief_gives_passed_failed_skipped(self):
        rc, out = run("--brief", "--bep", self.bep(), "--bazel-exit", "3")
        self.assertEqual(rc, 1)
        self.assertEqual(out, ["1 1 1"])

    def test_counts_alone_count_nothing_else(self):
        # A phase of counts only (scripts/test's Debian 13 and CMake rows)
        # must not pick up the test.xml files under bazel-testlogs.
        logs = os.path.join(self.dir, "bazel-testlogs", "t")
        os.makedirs(logs)
        with open(os.path.join(logs, "test.xml"), "w", encoding="utf-8") as f:
            f.write(GTEST_XML)
        rc, out = run("--brief", "--testlogs", os.path.join(self.dir, "bazel-testlogs"), "--counts", "d13=5,0,1")
        self.assertEqual(rc, 0)
        self.assertEqual(out, ["5 0 1"])

    def test_counts_of_another_suite_carry_their_skips(self):
        rc, out = run("--counts", "debian13=10,0,2", "--check", "check_layers=0")
        self.assertEqual(rc, 0)
        self.assertEqual(out[-2], "skipped: 2: 2 cases of debian13")
        self.assertEqual(out[-1], "tests: 11 passed, 0 failed")

    def test_bad_counts_are_refused(self):
        rc, _ = run("--counts", "x=1")
        self.assertEqual(rc, 2)

    def test_a_failed_check_and_a_missing_run_fail(self):
        rc, out = run("--check", "asan_query=1")
        self.assertEqual(out[-1], "tests: 0 passed, 1 failed")
        self.assertEqual(rc, 1)
        missing = os.path.join(self.dir, "none.bep.json")
        rc, out = run("--bep", missing, "--bazel-exit", "1")
        self.assertEqual(out[-1], "tests: 0 passed, 1 failed")
        self.assertEqual(rc, 1)

    def test_a_passing_run_without_skips_prints_no_skip_line(self):
        xml = GTEST_XML.replace('failures="1"', 'failures="0"').replace(
            '<failure message="x" type=""/>', "").replace(
            'result="skipped"', 'result="completed"').replace('<skipped message="no python"/>', "").replace(
            'skipped="1"', 'skipped="0"')
        rc, out = run("--bep", self.bep(status="PASSED", xml=xml))
        self.assertEqual(rc, 0)
        self.assertEqual(out, ["tests: 3 passed, 0 failed"])


if __name__ == "__main__":
    unittest.main()
