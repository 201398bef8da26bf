#!/usr/bin/env bash
# axe-core, the accessibility checker the real-browser tests run in each page (tests/appkit.py
# axe_violations), from npm at a pinned version into .ci/.npm (git-ignored). .ci/run calls this before
# the tests; a test calls it when the file is missing (make test on a fresh clone). Idempotent: quick
# when the pinned version is there. Needs npm (Debian's npm package; .ci/run installs it in CI).
set -euo pipefail
cd "$(dirname "$0")/.."
AXE_VERSION=4.10.3
PREFIX=.ci/.npm
if [ -f "$PREFIX/node_modules/axe-core/axe.min.js" ] \
  && grep -q "\"version\": \"$AXE_VERSION\"" "$PREFIX/node_modules/axe-core/package.json"; then
  exit 0
fi
npm install --prefix "$PREFIX" --no-save --no-audit --no-fund --loglevel=error "axe-core@$AXE_VERSION" >/dev/null
test -f "$PREFIX/node_modules/axe-core/axe.min.js"
