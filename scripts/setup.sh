#!/usr/bin/env bash
# Set up a development environment from a fresh clone: a virtualenv in .venv with ageval and
# its development tools. Idempotent: an up-to-date .venv is reused.
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3}
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "ageval needs Python 3.11 or newer (found: $("$python" --version 2>&1))" >&2
  exit 1
fi
if ! "$python" -m venv --help >/dev/null 2>&1; then
  apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null
fi

# npm builds the read-only agent bundles (pi) that real-agent tests mount into containers.
if ! command -v npm >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm >/dev/null
fi

# Debian's chromium runs the browser tests of `ageval view`, driven by Playwright's Python
# package with this system browser: no browser is downloaded (never `playwright install`).
if [ ! -x /usr/bin/chromium ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi

stamp=.venv/.ageval-setup
if [ ! -x .venv/bin/python ] || [ pyproject.toml -nt "$stamp" ]; then
  "$python" -m venv .venv
  # uv installs the packages (parallel downloads: about 15 s where pip takes a minute); pip
  # itself installs uv, and installs everything when uv cannot be had.
  # ray: the cluster tests start a real local Ray cluster (`ageval run --cluster`).
  # --compile-bytecode (pip compiles by default): with PYTHONDONTWRITEBYTECODE set, as it is
  # in many containers, no process ever writes a .pyc, and each one compiles every module it
  # imports from source: `ageval run` with nothing to do took 1.2 s of CPU, 0.5 s compiled,
  # and every Ray worker and `ageval` subprocess of the tests paid the same. Compiling adds
  # about 9 s to the setup.
  if .venv/bin/python -m pip install -q uv 2>&1 | grep -v '^WARNING: Location' >&2; [ -x .venv/bin/uv ]; then
    .venv/bin/uv pip install -q --compile-bytecode --python .venv/bin/python -e '.[dev,ray]'
  else
    .venv/bin/python -m pip install -q --upgrade pip 2>&1 | grep -v '^WARNING: Location' || true
    .venv/bin/python -m pip install -q -e '.[dev,ray]' 2>&1 | grep -v '^WARNING: Location' || true
  fi
  .venv/bin/python -c 'import agevalx' 
  touch "$stamp"
fi
# ageval's own modules (installed editable, so not compiled above); only changed ones are
# compiled again.
.venv/bin/python -m compileall -q agevalx >/dev/null
echo "ageval is installed in .venv (activate with: source .venv/bin/activate)"
