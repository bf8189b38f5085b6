#!/usr/bin/env bash
# Set everything up and run the whole test suite: lint, types, unit tests, then the
# integration tests against a real Docker engine (started here when none is running).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/setup-docker.sh
echo "== ruff"
.venv/bin/ruff check agevalx tests benchmarks
.venv/bin/ruff format --check agevalx tests benchmarks
echo "== mypy"
.venv/bin/mypy
echo "== unit tests"
.venv/bin/pytest -q -m unit
echo "== integration tests"
.venv/bin/pytest -q -m "not unit"
