#!/usr/bin/env bash
# A throwaway PostgreSQL server on 127.0.0.1 for prefkit's tests, benchmarks and local development.
#
# Sourced (as .ci/run does):   source .ci/postgres.sh; postgres_start; ...; postgres_stop
# Executed (a developer):      bash .ci/postgres.sh start   # prints the export lines to use
#                              bash .ci/postgres.sh stop
#
# Uses Debian's `postgresql` package (installed with apt-get when no initdb is found and we are root).
# Every start runs initdb in a fresh temporary directory, owned by the `postgres` user when we are root
# (PostgreSQL refuses to run as root), listens on 127.0.0.1 only on a free port, with fsync off (the
# data is thrown away at stop). Authentication: the `postgres` superuser is trusted from 127.0.0.1;
# the role `prefkit_pw` must give its password (scram), so tests can check PGPASSWORD and ~/.pgpass.
# TLS is on (a self-signed certificate made with openssl at each start), as on a managed server: clients
# connect with libpq's default `sslmode=prefer`, so the tests run over TLS; `sslmode=disable` still works.
# The server is stopped by its PID (from postmaster.pid), never by name; the directory is removed.
#
# Exports: PREFKIT_TEST_PG_URL (a superuser URL without password), PREFKIT_TEST_PG_PASSWORD_ROLE
# and PREFKIT_TEST_PG_PASSWORD (the password-only role and its password).

PG_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PG_STATE="${PG_STATE:-${TMPDIR:-/tmp}/prefkit-pg-$(id -u)}"   # pid, data dir, env of the running server
PG_WAIT_S="${PG_WAIT_S:-60}"

_pg_log() { echo "== postgres: $*" >&2; }

_pg_bindir() {
  local d
  for d in /usr/lib/postgresql/*/bin; do
    [ -x "$d/initdb" ] && { echo "$d"; return 0; }
  done
  command -v initdb >/dev/null 2>&1 && { dirname "$(command -v initdb)"; return 0; }
  return 1
}

_pg_apt() {  # apt-get that waits for another apt-get's lock (.ci/run installs Chromium beside it)
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 "$@"
}

_pg_install() {
  if ! command -v openssl >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then  # for the server's certificate
    _pg_apt update -qq && _pg_apt install -y -qq --no-install-recommends openssl >/dev/null
  fi
  _pg_bindir >/dev/null && return 0
  if [ "$(id -u)" != 0 ]; then
    _pg_log "no initdb found; install Debian's postgresql package (sudo apt-get install postgresql)"
    return 1
  fi
  _pg_log "installing Debian's postgresql package"
  _pg_apt update -qq
  _pg_apt install -y -qq --no-install-recommends postgresql >/dev/null
  # The package starts its own cluster on 5432; ours is separate, so leave that one alone.
  _pg_bindir >/dev/null
}

_pg_as() {  # run a command as the server's owner (postgres when we are root, else ourselves)
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

_pg_free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

postgres_start() {
  if [ -f "$PG_STATE/env" ] && [ -f "$PG_STATE/data_dir" ] \
      && kill -0 "$(head -n1 "$(cat "$PG_STATE/data_dir")/postmaster.pid" 2>/dev/null)" 2>/dev/null; then
    _pg_log "already running; reusing it"
    # shellcheck source=/dev/null
    source "$PG_STATE/env"
    return 0
  fi
  _pg_install || return 1
  local bin data port t0=$SECONDS password
  bin="$(_pg_bindir)"
  mkdir -p "$PG_STATE"
  data="$(mktemp -d "${TMPDIR:-/tmp}/prefkit-pg-data.XXXXXX")"
  [ "$(id -u)" = 0 ] && chown postgres: "$data"
  chmod 700 "$data"
  echo "$data" >"$PG_STATE/data_dir"
  port="$(_pg_free_port)"
  password="$(python3 -c 'import secrets; print(secrets.token_hex(12))')"
  _pg_as "$bin/initdb" -D "$data" -U postgres --no-locale -E UTF8 --auth=trust >"$PG_STATE/initdb.log" 2>&1 \
    || { cat "$PG_STATE/initdb.log" >&2; return 1; }
  # A self-signed certificate for 127.0.0.1, readable only by the server's owner.
  openssl req -new -x509 -days 2 -nodes -subj "/CN=127.0.0.1" -newkey rsa:2048 \
    -keyout "$data/server.key" -out "$data/server.crt" >"$PG_STATE/openssl.log" 2>&1 \
    || { cat "$PG_STATE/openssl.log" >&2; return 1; }
  chmod 600 "$data/server.key"
  [ "$(id -u)" = 0 ] && chown postgres: "$data/server.key" "$data/server.crt"
  _pg_as sh -c "cat >'$data/pg_hba.conf'" <<EOF
local all all trust
host all prefkit_pw 127.0.0.1/32 scram-sha-256
host all all 127.0.0.1/32 trust
EOF
  _pg_as "$bin/pg_ctl" -D "$data" -l "$data/server.log" -w -t "$PG_WAIT_S" \
    -o "-h 127.0.0.1 -p $port -k $data -c fsync=off -c synchronous_commit=on -c full_page_writes=off -c max_connections=200 -c ssl=on" \
    start >/dev/null || { tail -n 30 "$data/server.log" >&2; postgres_stop; return 1; }
  _pg_as "$bin/psql" -h "$data" -p "$port" -U postgres -d postgres -qAt -v ON_ERROR_STOP=1 \
    -c "CREATE ROLE prefkit_pw LOGIN PASSWORD '$password' CREATEDB" >/dev/null || { postgres_stop; return 1; }
  export PREFKIT_TEST_PG_URL="postgresql://postgres@127.0.0.1:$port/postgres"
  export PREFKIT_TEST_PG_PASSWORD_ROLE=prefkit_pw
  export PREFKIT_TEST_PG_PASSWORD="$password"
  ( umask 077; cat >"$PG_STATE/env" ) <<EOF
export PREFKIT_TEST_PG_URL=$PREFKIT_TEST_PG_URL
export PREFKIT_TEST_PG_PASSWORD_ROLE=$PREFKIT_TEST_PG_PASSWORD_ROLE
export PREFKIT_TEST_PG_PASSWORD=$PREFKIT_TEST_PG_PASSWORD
EOF
  _pg_log "up at 127.0.0.1:$port (pid $(head -n1 "$data/postmaster.pid"), $("$bin/postgres" --version)) in $(( SECONDS - t0 ))s"
}

postgres_stop() {
  [ -f "$PG_STATE/data_dir" ] || return 0
  local data pid
  data="$(cat "$PG_STATE/data_dir")"
  pid="$(head -n1 "$data/postmaster.pid" 2>/dev/null || true)"
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -INT "$pid" 2>/dev/null || true   # fast shutdown: roll back open transactions, then exit
    for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -KILL "$pid" 2>/dev/null || true
    _pg_log "stopped pid $pid"
  fi
  rm -rf "$data"
  rm -f "$PG_STATE/data_dir" "$PG_STATE/env" "$PG_STATE/initdb.log" "$PG_STATE/openssl.log"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  set -euo pipefail
  case "${1:-}" in
    start)
      postgres_start
      echo "# PostgreSQL is running; load its settings into your shell with:"
      echo "source $PG_STATE/env"
      ;;
    stop) postgres_stop ;;
    *) echo "usage: bash .ci/postgres.sh start|stop" >&2; exit 2 ;;
  esac
fi
