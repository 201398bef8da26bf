"""Benchmark of the LLM layer against a plain asyncio + AsyncOpenAI loop on the same loopback server.

    .venv/bin/python bench/bench_llm.py [--calls 2000] [--concurrency 32] [--latency 0.2]

Starts the fake OpenAI server (tests/fakeopenai.py) in its own process on 127.0.0.1 with a fixed
latency, then makes the same structured calls (``chat.completions.parse``) twice in this process:
through a bare semaphore loop and through ``LLMLayer`` (cache lookups, rate-limit bookkeeping,
validation, one committed SQLite transaction per answer). Prints wall time, throughput, the layer's
throughput ratio to the bare loop, the layer's extra CPU per call, and a cached rerun (HTTP requests
made, seconds). It never talks to anything but 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import openai  # noqa: E402
from prefkit.curation.project import Project  # noqa: E402
from prefkit.pipelines.llm import LLMLayer, LLMRequest, Usage  # noqa: E402
from prefkit.pipelines.llm.types import BaseBackend  # noqa: E402
from pydantic import BaseModel  # noqa: E402

KEY = "sk-bench-not-a-real-key"


class Reply(BaseModel):
    text: str


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(
    latency: float, responder: str | None = None, wait_s: float = 10.0
) -> tuple[subprocess.Popen, str]:
    """The fake server in its own process; ``responder`` = ``path/to/file.py:function`` (default: echo)."""
    port = free_port()
    extra = ["--responder", responder] if responder else []
    proc = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "tests" / "fakeopenai.py"),
            "--port",
            str(port),
            "--latency",
            str(latency),
            *extra,
        ],
        cwd=ROOT,
    )
    base = f"http://127.0.0.1:{port}"
    for _ in range(int(wait_s / 0.05)):
        try:
            stats(base)
            return proc, base
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("fake server did not start")


def stats(base: str) -> dict:
    with urllib.request.urlopen(f"{base}/_fake/stats", timeout=5) as resp:
        return json.loads(resp.read())


def prompts(n: int, tag: str) -> list[str]:
    return [f"[{tag}] write a one-line reply for request number {i}" for i in range(n)]


async def bare_loop(base_url: str, texts: list[str], concurrency: int) -> int:
    """What a careful script does without prefkit: a semaphore around chat.completions.parse."""
    client = openai.AsyncOpenAI(base_url=base_url, api_key=KEY, max_retries=4, timeout=60)
    semaphore = asyncio.Semaphore(concurrency)

    async def one(text: str) -> bool:
        async with semaphore:
            completion = await client.chat.completions.parse(
                model="gpt-4o-mini",
                messages=[{"role": "user", "content": text}],
                response_format=Reply,
                temperature=0.7,
                seed=0,
            )
            return completion.choices[0].message.parsed is not None

    results = await asyncio.gather(*(one(t) for t in texts))
    await client.close()
    return sum(results)


class InstantBackend(BaseBackend):
    """Answers after 5 ms without HTTP: isolates the layer's own bookkeeping CPU."""

    name = "openai"
    offline = False

    async def complete(self, request, model, seed):
        await asyncio.sleep(0.005)
        return (
            '{"text": "answer"}',
            Usage(20, 5, 0),
            {"endpoint": "127.0.0.1", "system_fingerprint": "fp_bench"},
        )


def bookkeeping_only(n: int, concurrency: int, tmp: str) -> float:
    """CPU ms per call of the layer alone (cache lookup, validation, provenance, grouped commits)."""
    project = Project.init(Path(tmp) / "bookkeeping")
    with LLMLayer(
        project.store, {"concurrency": concurrency}, backend=InstantBackend(), progress=False
    ) as layer:
        requests = [
            LLMRequest("bench", f"r{i}", "writer", (("user", t),), Reply)
            for i, t in enumerate(prompts(n, "bk"))
        ]
        _, _, cpu = measure(lambda: layer.run(requests))
    project.close()
    return cpu / n * 1000


def measure(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    proc, base = start_server(args.latency)
    os.environ["OPENAI_API_KEY"] = KEY
    try:
        run(args, base)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def bare_round(args, base_url: str, tag: str) -> tuple[float, float]:
    n, conc = args.calls, args.concurrency
    ok, wall, cpu = measure(lambda: asyncio.run(bare_loop(base_url, prompts(n, tag), conc)))
    print(f"  bare AsyncOpenAI loop : {wall:6.2f} s  {n / wall:7.1f} calls/s  cpu {cpu:5.2f} s  ok={ok}")
    return wall, cpu


def layer_round(
    args, base: str, tag: str, tmp: str
) -> tuple[float, float, LLMLayer, list[LLMRequest], Project]:
    n = args.calls
    project = Project.init(Path(tmp) / tag)
    layer = LLMLayer(
        project.store,
        {"base_url": f"{base}/v1", "concurrency": args.concurrency},
        backend="openai",
        seed=0,
        progress=False,
    )
    requests = [
        LLMRequest("bench", f"r{i}", "writer", (("user", t),), Reply) for i, t in enumerate(prompts(n, tag))
    ]
    before = stats(base)["chat"]
    responses, wall, cpu = measure(lambda: layer.run(requests))
    print(
        f"  LLMLayer              : {wall:6.2f} s  {n / wall:7.1f} calls/s  cpu {cpu:5.2f} s  "
        f"ok={sum(r.ok for r in responses)}  http={stats(base)['chat'] - before}"
    )
    return wall, cpu, layer, requests, project


def run(args, base: str) -> None:
    n, conc = args.calls, args.concurrency
    print(
        f"nproc={os.cpu_count()} calls={n} concurrency={conc} server latency={args.latency * 1000:.0f} ms "
        f"rounds={args.rounds} (bare and layer alternate)"
    )
    print(f"ideal wall time (calls / concurrency x latency): {n / conc * args.latency:.2f} s")
    bare, layered = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for round_no in range(args.rounds):
            print(f"round {round_no + 1}")
            bare.append(bare_round(args, f"{base}/v1", f"bare{round_no}"))
            wall, cpu, layer, requests, project = layer_round(args, base, f"layer{round_no}", tmp)
            layered.append((wall, cpu))
            if round_no < args.rounds - 1:
                layer.close()
                project.close()
        best = min(w for w, _ in bare) / min(w for w, _ in layered)
        median = statistics.median(w for w, _ in bare) / statistics.median(w for w, _ in layered)
        print(
            f"throughput ratio layer/bare: best walls {best:.3f}, median walls {median:.3f}  (goal >= 0.95)"
        )
        bare_cpu = statistics.mean(c for _, c in bare) / n * 1000
        layer_cpu = statistics.mean(c for _, c in layered) / n * 1000
        print(
            f"CPU per call (mean of rounds): layer {layer_cpu:.2f} ms, bare {bare_cpu:.2f} ms, "
            f"overhead {layer_cpu - bare_cpu:+.2f} ms/call"
        )
        before = stats(base)["chat"]
        again, wall, cpu = measure(lambda: layer.run(requests))
        http = stats(base)["chat"] - before
        cached = sum(r.from_cache for r in again)
        print(
            f"cached rerun of the last {n} calls: {wall:.2f} s  http requests={http}  from cache={cached}/{n}  "
            "(goal 0, < 5 s)"
        )
        layer.close()
        project.close()
        print(
            f"fake server: at most {stats(base)['max_in_flight']} requests in flight (latency-bound, not CPU-bound)"
        )
        print(
            f"layer bookkeeping alone (in-process backend, no HTTP): "
            f"{bookkeeping_only(n, conc, tmp):.3f} ms CPU per call"
        )


if __name__ == "__main__":
    main()
