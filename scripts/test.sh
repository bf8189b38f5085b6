#!/usr/bin/env bash
# Set everything up and run the whole test suite: the integration tests against a real Docker
# engine (started here when none is running), then, beside the last of them, the unit tests,
# lint, types and import cycles.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# The parity tests need the real harbor (a venv of its own, minutes of downloads): it installs
# in the background from here on, beside the Docker engine's setup (which on a fresh machine
# installs the engine and builds the base image: minutes that no test can use) and the first
# integration tests; a test that needs it waits on its lock. It needs no engine and no apt.
harbor_log=$(mktemp)
.venv/bin/python -m agevalx.testing.harbor >"$harbor_log" 2>&1 &
harbor_install=$!
bash scripts/setup-docker.sh
# The agents' bundles (npm and PyPI downloads, minutes) build in the background too, into the
# bundles folder the agent tests share; a test whose bundle is still building waits on its lock.
bundles_log=$(mktemp)
.venv/bin/ageval agents build --all >"$bundles_log" 2>&1 &
bundles_build=$!
echo "== PYTHONDONTWRITEBYTECODE=${PYTHONDONTWRITEBYTECODE:-unset} (the venv is compiled either way)"
# Five workers, one test file each at a time (the longest files first), each under an owner
# scope of its own (see tests/integration/conftest.py), so tests that kill ageval and resume
# it run here too, and each test counts and removes only what it made (salted images, its own
# labels). Five on two cores: much of a test waits on the engine, an agent's start or a
# model's retry interval; with four the machine was 87% busy over the phase, below 80% for
# minutes at a time while two workers waited. Over four runs, five took 12:03 to 13:22 where
# four took 12:46 and 12:51: no gain beyond the runs' spread, but no loss either (four took
# 13 to 14.5 min where three took 17; six, measured before the suite's CPU was cut, kept the
# machine 100% busy and gained nothing more). The Ray cluster and
# the soak's load need the machine without the others (beside them, a loaded machine failed
# timing-bound tests): they run afterwards, the two side by side (two workers, a file each:
# 4 min 20 s, where one after the other took 7).
# Both phases run even when the first fails, so one run reports every failure.
# Each worker collects what it is given: tests/integration alone, without the Hypothesis plugin
# (no integration test uses it), collects in 4.4 s of CPU where the whole tests/ took 9.5 s;
# six workers collect.
# The workers take the files in the conftest's order, the longest first
# (tests/integration/conftest.py): without --no-loadscope-reorder, pytest-xdist (3.6 and later)
# orders them by their number of tests, and a run's timeline showed OpenClaw's one-test file
# (206 s) starting 443 s into the phase, and four workers waiting 74 to 138 s for it at the end.
integration=(tests/integration -p no:hypothesispytest --no-loadscope-reorder)
timeline() {  # when each file of a phase ran, on which worker (tests/integration/timeline.py)
  echo "== the $1 phase's timeline"
  .venv/bin/python -m tests.integration.timeline "$suite_tmp/timeline-$1.jsonl" || true
}
# Each pytest run's temporary folder (every test's cache among them) lies under one folder of
# this run's, so that the images made for those caches can be removed at the end (below).
suite_tmp=$(mktemp -d /tmp/ageval-suite.XXXXXX)
echo "== integration tests"
parallel=0
AGEVAL_TEST_TIMELINE="$suite_tmp/timeline-parallel.jsonl" .venv/bin/pytest -q -m "not unit and not serial" -n 5 --dist loadfile --durations=15 \
  --basetemp "$suite_tmp/parallel" "${integration[@]}" || parallel=$?
# The unit tests (no engine) run beside the serial phase, whose files mostly wait (on Ray, on
# pi's model turns) and whose length the cluster file sets: beside it they took 8 s from the
# run where before it they took 80. Both serial files passed beside a machine at 100% (the
# whole suite on six workers), so the unit tests' load is no risk to them.
# Lint, types and import cycles (about 15 s of one core) follow the unit tests there too:
# before the integration tests they were 15 s of the run's length; beside the serial phase,
# whose last minutes leave a core idle, they cost none. A finding fails the run all the same.
echo "== integration tests that change engine-wide state, and beside them the unit tests"
echo "   then lint and types"
unit_log=$(mktemp)
.venv/bin/pytest -q -m unit -n 2 --basetemp "$suite_tmp/unit" >"$unit_log" 2>&1 &
unit_tests=$!
checks_log=$(mktemp)
(
  status=0
  wait_for() { while kill -0 "$1" 2>/dev/null; do sleep 1; done; }
  wait_for "$unit_tests"
  echo "== ruff"
  .venv/bin/ruff check agevalx tests benchmarks || status=1
  .venv/bin/ruff format --check agevalx tests benchmarks || status=1
  echo "== mypy"
  .venv/bin/mypy || status=1
  echo "== import cycles (every import, lazy and type-only ones too)"
  .venv/bin/python scripts/import_cycles.py --all || status=1
  exit "$status"
) >"$checks_log" 2>&1 &
checks=$!
serial=0
AGEVAL_TEST_TIMELINE="$suite_tmp/timeline-serial.jsonl" .venv/bin/pytest -q -m "not unit and serial" -n 2 --dist loadfile --durations=10 \
  --basetemp "$suite_tmp/serial" "${integration[@]}" || serial=$?
timeline parallel
timeline serial
unit=0
wait "$unit_tests" || unit=$?
echo "== unit tests"
cat "$unit_log"
lint=0
wait "$checks" || lint=$?
cat "$checks_log"
wait "$harbor_install" || true
echo "== the background install of harbor said: $(cat "$harbor_log")"
wait "$bundles_build" || true
echo "== the background build of the agents' bundles said: $(cat "$bundles_log")"
# The images made for the tests' caches (attempts' commits and task images: about 1,600 after
# one run, build steps included) are removed once the suite has reported, in the background
# (6 s), then the temporary folders, unless a test failed (they stay for its post-mortem, as
# pytest's own do).
images_log=/tmp/ageval-suite-images.log
failed=0
for phase in "$parallel" "$serial" "$unit" "$lint"; do [ "$phase" -eq 0 ] || failed=1; done
echo "== the images the tests made are being removed in the background (log: $images_log)"
setsid nohup bash -c '.venv/bin/python -m agevalx.testing.images "$1" && [ "$2" = 0 ] &&
  rm -rf "$1"' remove-images "$suite_tmp" "$failed" >"$images_log" 2>&1 </dev/null &
if [ "$failed" -ne 0 ]; then
  echo "tests failed (parallel phase: exit $parallel, serial phase: exit $serial," \
    "unit tests: exit $unit, lint and types: exit $lint)" >&2
  exit 1
fi
