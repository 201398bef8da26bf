#!/usr/bin/env bash
# The README's test command, `make test`, runs this: every check and every test, in five phases.
#
#   static       ruff, mypy, the import contracts, the CLI reference (.ci/static.py), run beside `tests`
#   tests        the suite on both cores: pytest-xdist, a test file per worker (--dist loadfile; the
#                slow files that need no browser first, then the heaviest: tests/conftest.py), everything
#                not marked `serial` or `labelstudio`
#   labelstudio  the tests that talk to Label Studio (and the console pages that push to it), also beside
#                `tests`, once its server answers (a background start by .ci/run is awaited; without a
#                server they skip locally and fail in CI). One process: they wait on the server as
#                much as they compute, so they fill the cores' idle moments instead of queueing after
#   engine       the tests that talk to the real inference engine (tests/test_engine.py), also beside
#                `tests`, once the engine answers (a background start by .ci/run is awaited; without
#                an engine they skip locally and fail in CI). One process: the engine answers one
#                request at a time, on one thread
#   serial       the tests marked `serial` (processes racing on purpose, replicas, kill -9), in the
#                Label Studio phase's process once its tests are done: one at a time, beside the
#                parallel tests' last files (which leave a core part idle while they wait on their
#                browsers), and never beside the engine tests: whichever of the two comes first runs
#                first (a warm run's engine tests come first, so the serial tests fill the tail; on a
#                fresh machine the engine is still being built, so the serial tests run before it)
#
# PYTEST_ARGS (from make) is passed to every pytest phase; PREFKIT_TEST_WORKERS sets the worker count
# (default: 2, the machine's cores); PREFKIT_PHASES names a file where each phase appends
# "name seconds status" (.ci/run prints them as a table). Exit status: 1 when any phase failed.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
BIN="${BIN:-.venv/bin}"
WORKERS="${PREFKIT_TEST_WORKERS:-2}"
PHASES="${PREFKIT_PHASES:-}"
REPORTS="$(mktemp -d "${TMPDIR:-/tmp}/prefkit-junit.XXXXXX")"
# shellcheck disable=SC2206
EXTRA=(${PYTEST_ARGS:-})
status=0

phase() {  # phase NAME COMMAND...: run, time and record one phase
  local name=$1 t0=$SECONDS rc=0
  shift
  echo "== $name"
  "$@" || rc=$?
  [ "$rc" = 5 ] && rc=0   # pytest: this phase's marker selected no test (the totals below still count)
  [ -n "$PHASES" ] && echo "$name $(( SECONDS - t0 )) $rc" >>"$PHASES"
  [ "$rc" = 0 ] || status=1
}

alone() {  # alone COMMAND...: run COMMAND while no other `alone` command runs (a lock directory)
  until mkdir "$REPORTS/alone" 2>/dev/null; do sleep 1; done
  "$@"
  rmdir "$REPORTS/alone"
}

pytest_phase() {  # pytest_phase NAME MARKER [ARGS...]
  local name=$1 marker=$2
  shift 2
  phase "$name" "$BIN/python" -m pytest -m "$marker" --junitxml="$REPORTS/$name.xml" "$@" "${EXTRA[@]}"
}

# shellcheck disable=SC2317  # run through phase "$@"
engine_ready() {  # wait for a background start of .ci/run, then load the engine's settings
  # shellcheck source=/dev/null
  source .ci/engine.sh
  engine_await
}

# shellcheck disable=SC2317  # run through phase "$@"
labelstudio_ready() {  # wait for a background start of .ci/run, then load the server's settings
  # shellcheck source=/dev/null
  source .ci/labelstudio.sh
  labelstudio_await
}

# The static checks, the Label Studio tests and then the serial ones run beside the parallel tests
# (mypy alone would leave a core idle for a minute; the Label Studio tests wait on its server); their
# reports are printed when the tests are done. The static checks at low priority: nothing waits for them before the tests end.
STATIC_OUT="$REPORTS/static.out"
( phase static nice -n 10 "$BIN/python" .ci/static.py >"$STATIC_OUT" 2>&1; exit "$status" ) &
static_pid=$!
# One process for the Label Studio tests: Label Studio keeps its own data in SQLite, and two clients
# writing at once lost a gold task's ground-truth annotation in a trial run (tests/test_labelstudio_push.py).
LS_OUT="$REPORTS/labelstudio.out"
(
  phase labelstudio-wait labelstudio_ready
  pytest_phase labelstudio "labelstudio and not serial"
  alone pytest_phase serial "serial"
  exit "$status"
) >"$LS_OUT" 2>&1 &
ls_pid=$!
ENGINE_OUT="$REPORTS/engine.out"
(
  phase engine-wait engine_ready
  alone pytest_phase engine "engine and not serial"
  exit "$status"
) >"$ENGINE_OUT" 2>&1 &
engine_pid=$!
if [ "$WORKERS" -gt 1 ]; then
  pytest_phase tests "not serial and not labelstudio and not engine" -n "$WORKERS" --dist loadfile
else
  pytest_phase tests "not serial and not labelstudio and not engine"
fi
wait "$static_pid" || status=1
cat "$STATIC_OUT"
wait "$ls_pid" || status=1
cat "$LS_OUT"
wait "$engine_pid" || status=1
cat "$ENGINE_OUT"

# One closing line for the whole run, summed over the phases' JUnit reports.
"$BIN/python" - "$REPORTS" <<'EOF' || status=1
import sys, pathlib, xml.etree.ElementTree as ET
n = dict(tests=0, failures=0, errors=0, skipped=0)
for report in pathlib.Path(sys.argv[1]).glob("*.xml"):
    for suite in ET.parse(report).getroot().iter("testsuite"):
        for key in n:
            n[key] += int(suite.get(key, 0))
failed = n["failures"] + n["errors"]
passed = n["tests"] - failed - n["skipped"]
print(f"total: {passed} passed, {failed} failed, {n['skipped']} skipped")
sys.exit(1 if passed == 0 else 0)
EOF
rm -rf "$REPORTS"
exit "$status"
