#!/bin/sh
# Runs count_tests_test.py with Debian's python3 (unittest; no pip packages).
exec /usr/bin/python3 tests/scripts/count_tests_test.py -v
