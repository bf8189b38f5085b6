#!/usr/bin/env bash
# Set everything up and run the whole test suite: lint, types, unit tests, integration tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
echo "== ruff"
.venv/bin/ruff check agevalx tests benchmarks
.venv/bin/ruff format --check agevalx tests benchmarks
echo "== mypy"
.venv/bin/mypy
echo "== unit tests"
.venv/bin/pytest -q -m unit
echo "== integration tests"
status=0
.venv/bin/pytest -q -m "not unit" || status=$?
# pytest exits 5 when no test was collected; that is not a failure of the suite.
if [ "$status" -ne 0 ] && [ "$status" -ne 5 ]; then exit "$status"; fi
