#!/usr/bin/env bash
# What the servers of the tests share (.ci/engine.sh and .ci/labelstudio.sh source this): a start in
# the background that the tests needing the server await, a wait until the server answers, a free
# port, and a stop by PID (never by name).
#
#   service_free_port PYTHON                      a free TCP port on 127.0.0.1
#   service_wait NAME PID LOG SECONDS PROBE...    until PROBE succeeds (every 0.5 s); fails at once when
#                                                 PID exits, or after SECONDS, showing LOG's last lines
#   service_kill NAME PID                         TERM to PID's children and PID, KILL after 10 s
#   service_start_background NAME BG ROOT START   START (a function) in a background subshell: its output
#                                                 in BG/log, its seconds in BG/seconds, then its exit status
#                                                 in BG/status (written last, atomically)
#   service_stop_background BG                    stop a background start still under way
#   service_started_here BG ROOT                  true when BG holds a background start of ROOT (not
#                                                 another checkout's leftover)
#   service_await NAME BG SECONDS                 wait for that start to end, show its log; 1 when it
#                                                 failed or did not finish in time

service_log() {  # service_log NAME MESSAGE...
  local name=$1
  shift
  echo "== $name: $*" >&2
}

service_free_port() {
  "$1" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

service_wait() {
  local name=$1 pid=$2 log=$3 deadline=$(( SECONDS + $4 )) wait_s=$4
  shift 4
  while (( SECONDS < deadline )); do
    if ! kill -0 "$pid" 2>/dev/null; then
      service_log "$name" "exited during start-up; last lines of its log:"
      tail -n 30 "$log" >&2
      return 1
    fi
    "$@" && return 0
    sleep 0.5
  done
  service_log "$name" "not answering after ${wait_s}s ($*); last lines of its log:"
  tail -n 30 "$log" >&2
  return 1
}

service_kill() {
  local name=$1 pid=$2
  kill -0 "$pid" 2>/dev/null || return 0
  pkill -TERM -P "$pid" 2>/dev/null || true   # its own children only
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
  kill -KILL "$pid" 2>/dev/null || true
  service_log "$name" "stopped pid $pid"
}

service_start_background() {
  local name=$1 bg=$2 root=$3 start=$4
  rm -rf "$bg" && mkdir -p "$bg"
  echo "$root" >"$bg/root"   # whose start it is: another checkout's leftover is not awaited
  (
    t0=$SECONDS
    rc=0
    "$start" >"$bg/log" 2>&1 || rc=$?
    echo "$(( SECONDS - t0 ))" >"$bg/seconds"
    echo "$rc" >"$bg/status.tmp" && mv "$bg/status.tmp" "$bg/status"
  ) &
  echo $! >"$bg/pid"
  service_log "$name" "installing and starting in the background (log: $bg/log)"
}

service_stop_background() {
  local bg=$1
  # not from within the start itself (a start that fails stops its server, then writes its status)
  if [ -f "$bg/pid" ] && [ ! -f "$bg/status" ] && [ "$(cat "$bg/pid")" != "$BASHPID" ]; then
    pkill -TERM -P "$(cat "$bg/pid")" 2>/dev/null || true
    kill -TERM "$(cat "$bg/pid")" 2>/dev/null || true
  fi
}

service_started_here() {  # service_started_here BG ROOT: is there a background start of ROOT to await?
  [ -f "$1/pid" ] && [ "$(cat "$1/root" 2>/dev/null)" = "$2" ]
}

service_await() {
  local name=$1 bg=$2 deadline=$(( SECONDS + $3 ))
  while [ ! -f "$bg/status" ] && (( SECONDS < deadline )); do sleep 1; done
  cat "$bg/log" >&2
  if [ "$(cat "$bg/status" 2>/dev/null)" != 0 ]; then
    service_log "$name" "the background start failed (or did not finish in time)"
    return 1
  fi
}
