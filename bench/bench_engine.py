"""The LLM layer against a real inference engine, beside a bare ``openai`` client on the same engine.

    source .ci/.engine-venv/run/env   # after `bash .ci/engine.sh start`
    .venv/bin/python bench/bench_engine.py [--calls 8] [--rounds 2] [--max-tokens 48]

The engine is .ci/engine.sh's llama-cpp-python server with SmolLM2-135M-Instruct on one thread; it
answers one request at a time, so both sides send one at a time. Each round sends the same N structured
requests (a JSON object with a schema, in the form the engine takes: ``json_object`` + ``schema``) and N
free-text requests, greedy (temperature 0, seed 0) so both sides get the same answers, through a bare
``AsyncOpenAI`` loop and through ``LLMLayer`` in a fresh project (its cache empty; the layer finds the
form itself: its first structured call is refused once by the engine, which the bare loop is spared);
the two alternate which goes first. Prints per side the wall time, calls/s, completion tokens/s as the engine reported them, and
the layer's throughput relative to the bare loop (goal >= 0.95). Nothing but 127.0.0.1 is contacted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import openai  # noqa: E402
from prefkit.curation.project import Project  # noqa: E402
from prefkit.pipelines.llm import LLMLayer, LLMRequest  # noqa: E402
from pydantic import BaseModel, ConfigDict  # noqa: E402


class City(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    country: str
    population_millions: float


def requests(n: int, max_tokens: int) -> list[LLMRequest]:
    structured = [
        LLMRequest(
            "bench.structured",
            f"s{i}",
            "assistant",
            (
                (
                    "user",
                    f"Give a large city number {i + 1} of the world as JSON: its name, country and population.",
                ),
            ),
            City,
            temperature=0.0,
            max_tokens=max_tokens,
        )
        for i in range(n)
    ]
    free = [
        LLMRequest(
            "bench.free",
            f"f{i}",
            "assistant",
            (("user", f"In one sentence, what is topic number {i + 1} of a first course in cooking?"),),
            None,
            temperature=0.0,
            max_tokens=max_tokens,
        )
        for i in range(n)
    ]
    return structured + free


async def bare(base_url: str, model: str, reqs: list[LLMRequest]) -> tuple[int, int]:
    """One at a time through AsyncOpenAI; (calls answered, completion tokens)."""
    client = openai.AsyncOpenAI(base_url=base_url, api_key="sk-no-key", max_retries=1, timeout=600)
    ok = tokens = 0
    for r in reqs:
        fmt = {}
        if r.response_model is not None:
            fmt = {"response_format": {"type": "json_object", "schema": r.response_model.model_json_schema()}}
        c = await client.chat.completions.create(
            model=model,
            messages=r.chat_messages(),
            temperature=r.temperature,
            max_tokens=r.max_tokens,
            seed=0,
            **fmt,
        )
        text = c.choices[0].message.content or ""
        try:
            if r.response_model is not None:
                r.response_model.model_validate_json(text)
            ok += 1
        except ValueError:  # pydantic's ValidationError: counted as not ok, as the layer counts it
            pass
        tokens += c.usage.completion_tokens if c.usage else 0
    await client.close()
    return ok, tokens


def layered(base_url: str, model: str, reqs: list[LLMRequest]) -> tuple[int, int, int]:
    """Through LLMLayer in a fresh project; (calls ok, completion tokens, cached answers)."""
    with tempfile.TemporaryDirectory() as tmp:
        project = Project.init(Path(tmp) / "bench")
        cfg = {
            "base_url": base_url,
            "models": dict.fromkeys(("writer", "user_simulator", "assistant", "judge"), model),
            "concurrency": 1,
            "timeout_s": 600,
            "max_retries": 1,
            "repair_attempts": 0,
        }
        with LLMLayer(project.store, cfg, backend="openai", progress=False) as layer:
            out = layer.run(reqs)
        project.close()
    return sum(r.ok for r in out), sum(r.usage.completion_tokens for r in out), sum(r.from_cache for r in out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=8, help="structured and free-text requests each, per round")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=48)
    ap.add_argument("--base-url", default=os.environ.get("PREFKIT_ENGINE_URL", ""))
    ap.add_argument("--model", default=os.environ.get("PREFKIT_ENGINE_MODEL", "SmolLM2-135M-Instruct"))
    args = ap.parse_args()
    if not args.base_url:
        sys.exit("no engine: `bash .ci/engine.sh start`, then `source .ci/.engine-venv/run/env`")
    os.environ.pop("OPENAI_API_KEY", None)  # a local engine needs none
    reqs = requests(args.calls, args.max_tokens)
    print(
        f"nproc={os.cpu_count()} load={os.getloadavg()[0]:.1f} engine={args.base_url} model={args.model} "
        f"requests/round={len(reqs)} ({args.calls} structured + {args.calls} free text) max_tokens={args.max_tokens}"
    )
    walls: dict[str, list[float]] = {"bare": [], "layer": []}
    tps: dict[str, list[float]] = {"bare": [], "layer": []}

    def side(name: str) -> None:
        t0 = time.perf_counter()
        if name == "bare":
            ok, tokens = asyncio.run(bare(args.base_url, args.model, reqs))
            extra = ""
        else:
            ok, tokens, cached = layered(args.base_url, args.model, reqs)
            extra = f" cached={cached}"
        wall = time.perf_counter() - t0
        walls[name].append(wall)
        tps[name].append(tokens / wall)
        label = "bare AsyncOpenAI" if name == "bare" else "LLMLayer"
        print(
            f"  {label:17}: {wall:7.2f} s  {ok / wall:5.2f} calls/s  {tokens / wall:6.1f} tok/s  ok={ok} tokens={tokens}{extra}"
        )

    for rnd in range(1, args.rounds + 1):  # the sides alternate which goes first
        print(f"round {rnd} (load {os.getloadavg()[0]:.1f})")
        for name in ("bare", "layer") if rnd % 2 else ("layer", "bare"):
            side(name)
    best = min(walls["bare"]) / min(walls["layer"])
    median = statistics.median(walls["bare"]) / statistics.median(walls["layer"])
    print(f"throughput ratio layer/bare: best walls {best:.3f}, median walls {median:.3f}  (goal >= 0.95)")
    print(
        f"engine tokens/s (completion, median): bare {statistics.median(tps['bare']):.1f}, "
        f"layer {statistics.median(tps['layer']):.1f}"
    )


if __name__ == "__main__":
    main()
