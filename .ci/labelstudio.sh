#!/usr/bin/env bash
# A real Label Studio server on 127.0.0.1 for prefkit's integration tests and for local development.
#
# Sourced (as .ci/run does):   source .ci/labelstudio.sh; labelstudio_start; ...; labelstudio_stop
# Executed (a developer):      bash .ci/labelstudio.sh start   # prints the export lines to use
#                              bash .ci/labelstudio.sh stop
#
# Label Studio lives in its own virtualenv (.ci/.ls-venv, git-ignored) so its pins never constrain
# prefkit's; a present venv is reused, so reruns skip the install. Every start uses a fresh temporary
# data directory (its database copied from a migrated one kept in ~/.cache/prefkit), binds 127.0.0.1
# only, turns off the version check, analytics, Sentry and remote feature flags (nothing leaves the
# machine), and gives the admin a legacy 40-hex API token (the legacy-token flag is read only when the
# organization is first created, which is why the data directory must be fresh and its copied
# database holds no organization). The server is stopped by its PID, never by name.
#
# Exports: LABEL_STUDIO_URL, LABEL_STUDIO_API_KEY, LABEL_STUDIO_ADMIN_EMAIL, LABEL_STUDIO_ADMIN_PASSWORD.

LS_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LS_VENV="${LS_VENV:-$LS_ROOT/.ci/.ls-venv}"
LS_VERSION="${LS_VERSION:-1.23.2}"
LS_PYTHON="${LS_PYTHON:-python3}"
LS_STATE="$LS_VENV/run"          # pid, data dir, log and env file of the running server
LS_WAIT_S="${LS_WAIT_S:-240}"

# shellcheck source=.ci/service.sh
source "$LS_ROOT/.ci/service.sh"

_ls_log() { service_log labelstudio "$@"; }

_ls_install() {
  if [ -x "$LS_VENV/bin/label-studio" ] && [ -f "$LS_VENV/.installed-$LS_VERSION" ]; then
    return 0
  fi
  _ls_log "installing label-studio==$LS_VERSION into $LS_VENV"
  local t0=$SECONDS
  [ -x "$LS_VENV/bin/python" ] || "$LS_PYTHON" -m venv "$LS_VENV" || return 1
  # The installer's output goes to a log (it is long; shown only when the install fails). uv (from PyPI)
  # installs Label Studio's ~150 packages in seconds where pip takes minutes; pip when uv cannot be had.
  # No bytecode compiled ahead: the server imports a fraction of the files, compiled on first import.
  if ! { { "$LS_VENV/bin/python" -m pip install -q uv \
           && "$LS_VENV/bin/uv" pip install -q --python "$LS_VENV/bin/python" "label-studio==$LS_VERSION"; } \
         || "$LS_VENV/bin/python" -m pip install -q --no-compile "label-studio==$LS_VERSION"; } \
      >"$LS_VENV/pip-install.log" 2>&1; then
    tail -n 40 "$LS_VENV/pip-install.log" >&2
    return 1
  fi
  touch "$LS_VENV/.installed-$LS_VERSION"
  _ls_log "installed in $(( SECONDS - t0 ))s"
}

# Label Studio's migrations take ~28 CPU-s on every start with a fresh data directory: a database with
# them applied (and nothing else: no user, no organization) is kept beside pip's cache, one per version,
# and copied into each fresh data directory. The server still checks on start that every migration is
# applied and applies any that is not.
LS_CACHE="${LS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/prefkit}"
# Every Label Studio process here (the migration, the server): its own SQLite database, and no version
# check, analytics, Sentry or remote feature flags (nothing leaves the machine).
LS_OFFLINE=(DJANGO_DB=sqlite LATEST_VERSION_CHECK=false COLLECT_ANALYTICS=false FEATURE_FLAGS_OFFLINE=true
  SENTRY_DSN= FRONTEND_SENTRY_DSN=)

_ls_migrated() {  # $1 = a fresh data directory: Label Studio's database, migrated, copied into it
  local db="$LS_CACHE/labelstudio-$LS_VERSION.sqlite3" tmp
  if [ ! -s "$db" ]; then
    mkdir -p "$LS_CACHE" || return 1
    tmp="$(mktemp -d "${TMPDIR:-/tmp}/prefkit-ls-migrate.XXXXXX")"
    if ! env "${LS_OFFLINE[@]}" LABEL_STUDIO_BASE_DATA_DIR="$tmp" "$LS_VENV/bin/python" -c 'from label_studio.server import _setup_env, _apply_database_migrations
_setup_env(); _apply_database_migrations()' >"$LS_STATE/migrate.log" 2>&1; then
      tail -n 20 "$LS_STATE/migrate.log" >&2
      rm -rf "$tmp"
      return 1
    fi
    cp "$tmp/label_studio.sqlite3" "$db.$$" && mv "$db.$$" "$db"
    rm -rf "$tmp"
  fi
  cp "$db" "$1/label_studio.sqlite3"
}

_ls_random_hex() {  # $1 = number of bytes
  "$LS_VENV/bin/python" -c "import secrets, sys; print(secrets.token_hex(int(sys.argv[1])))" "$1"
}

_ls_healthy() { curl -fsS --max-time 2 "$1/health" 2>/dev/null | grep -q '"UP"'; }

_ls_write_env() {  # holds the admin password and token: readable by this user only
  ( umask 077; cat >"$LS_STATE/env" ) <<EOF
export LABEL_STUDIO_URL=$LABEL_STUDIO_URL
export LABEL_STUDIO_API_KEY=$LABEL_STUDIO_API_KEY
export LABEL_STUDIO_ADMIN_EMAIL=$LABEL_STUDIO_ADMIN_EMAIL
export LABEL_STUDIO_ADMIN_PASSWORD=$LABEL_STUDIO_ADMIN_PASSWORD
EOF
}

labelstudio_start() {
  if [ -f "$LS_STATE/pid" ] && kill -0 "$(cat "$LS_STATE/pid")" 2>/dev/null; then
    _ls_log "already running (pid $(cat "$LS_STATE/pid")); reusing it"
    # shellcheck source=/dev/null
    source "$LS_STATE/env"
    return 0
  fi
  _ls_install || { _ls_log "install failed"; return 1; }
  mkdir -p "$LS_STATE"
  local t0=$SECONDS port data
  port="$(service_free_port "$LS_VENV/bin/python")"
  data="$(mktemp -d "${TMPDIR:-/tmp}/prefkit-ls-data.XXXXXX")"
  export LABEL_STUDIO_URL="http://127.0.0.1:$port"
  export LABEL_STUDIO_API_KEY
  LABEL_STUDIO_API_KEY="$(_ls_random_hex 20)"
  export LABEL_STUDIO_ADMIN_EMAIL="admin@prefkit.example.com"
  export LABEL_STUDIO_ADMIN_PASSWORD
  LABEL_STUDIO_ADMIN_PASSWORD="$(_ls_random_hex 12)"
  echo "$data" >"$LS_STATE/data_dir"
  _ls_migrated "$data" || { _ls_log "migrating its database failed (log: $LS_STATE/migrate.log)"; return 1; }
  LABEL_STUDIO_BASE_DATA_DIR="$data" \
  LABEL_STUDIO_USERNAME="$LABEL_STUDIO_ADMIN_EMAIL" \
  LABEL_STUDIO_PASSWORD="$LABEL_STUDIO_ADMIN_PASSWORD" \
  LABEL_STUDIO_USER_TOKEN="$LABEL_STUDIO_API_KEY" \
  LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN=true \
    env "${LS_OFFLINE[@]}" "$LS_VENV/bin/label-studio" start --no-browser --internal-host 127.0.0.1 \
      --port "$port" --host "$LABEL_STUDIO_URL" --data-dir "$data" \
      >"$LS_STATE/server.log" 2>&1 </dev/null &
  echo $! >"$LS_STATE/pid"
  _ls_write_env
  if ! service_wait labelstudio "$(cat "$LS_STATE/pid")" "$LS_STATE/server.log" "$LS_WAIT_S" \
      _ls_healthy "$LABEL_STUDIO_URL"; then
    labelstudio_stop
    return 1
  fi
  _ls_log "up at $LABEL_STUDIO_URL (pid $(cat "$LS_STATE/pid")) in $(( SECONDS - t0 ))s; env in $LS_STATE/env"
}

labelstudio_stop() {
  service_stop_background "$LS_BG"
  [ -f "$LS_STATE/pid" ] || return 0
  service_kill labelstudio "$(cat "$LS_STATE/pid")"
  if [ -f "$LS_STATE/data_dir" ]; then
    rm -rf "$(cat "$LS_STATE/data_dir")"
  fi
  rm -f "$LS_STATE/pid" "$LS_STATE/data_dir" "$LS_STATE/env"
}

# In the background (.ci/run): install and start while the tests that do not need the server run.
# labelstudio_await (in .ci/tests.sh, before the Label Studio tests) waits for it and loads its settings.
LS_BG="${LS_BG:-${TMPDIR:-/tmp}/prefkit-ls-bg-$(id -u)}"   # status and log of a background start

labelstudio_start_background() {
  service_start_background labelstudio "$LS_BG" "$LS_ROOT" labelstudio_start
}

labelstudio_await() {
  # No background start of this checkout (none, or one another checkout's .ci/run left behind): the
  # tests use what the environment names.
  service_started_here "$LS_BG" "$LS_ROOT" || return 0
  service_await labelstudio "$LS_BG" $(( LS_WAIT_S + 2400 )) || return 1  # the install shares the cores
  # shellcheck source=/dev/null
  source "$LS_STATE/env"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  set -euo pipefail
  case "${1:-}" in
    start)
      labelstudio_start
      echo "# Label Studio is running; load its settings into your shell with:"
      echo "source $LS_STATE/env"
      cat "$LS_STATE/env"
      ;;
    stop) labelstudio_stop ;;
    *) echo "usage: bash .ci/labelstudio.sh start|stop" >&2; exit 2 ;;
  esac
fi
