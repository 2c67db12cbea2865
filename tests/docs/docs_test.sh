#!/bin/sh
# Runs docs_test.py with Debian's python3 (unittest; no pip packages).
exec /usr/bin/python3 tests/docs/docs_test.py -v
