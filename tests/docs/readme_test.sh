#!/bin/sh
# Runs readme_test.py with Debian's python3 (unittest and numpy; no pip packages).
exec /usr/bin/python3 tests/docs/readme_test.py -v
