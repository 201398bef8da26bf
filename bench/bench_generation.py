"""How full generation keeps an engine's slots: calls in flight against a batching-engine stand-in.

    .venv/bin/python bench/bench_generation.py [--personas 32] [--concurrency 64] [--mean 0.5]
        [--sigma 0.8] [--rss-personas 1000]

A loopback OpenAI-compatible server (tests/fakeopenai.py, in its own process on 127.0.0.1) answers the
generation prompts like the scripted test server (tests/test_generation_openai.py), with dialogues of
1-4 replies (drawn per session), and holds each call for a latency drawn from the request itself:
constant ``--mean`` seconds, or lognormal with that mean and ``--sigma``. Like an engine with free
slots it never queues, so the calls in flight are what the client keeps open. It logs every call's
start, end and stage; ``prefkit.pipelines.generation.run.generate`` runs ``--personas`` personas at
``[llm] concurrency`` and this prints, per latency law: wall, the ideal (the calls' summed latency /
concurrency), mean calls in flight over the whole run and from the first checklist call to the last
dialogue call (the first stages make one call per persona, fewer than the slots), and their share
of the concurrency. Then the peak RSS of an offline run of ``--rss-personas`` personas (the pipeline's
own memory; the HTTP client's is bounded by the concurrency). Never talks to anything but 127.0.0.1.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import re
import resource
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from statistics import NormalDist

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

KEY = "sk-bench-not-a-real-key"
STAGE_OF = {  # the first words of each stage's system prompt
    "You write realistic user personas": "personas",
    "You help build a personalization benchmark": "factors",
    "You write the story": "sessions",
    "You turn a user's preference": "checklists",
}


def _unit(*parts: str) -> float:
    """A uniform draw in (0, 1) from the request's own text (the same call gets the same draw)."""
    n = int.from_bytes(hashlib.sha256("|".join(parts).encode()).digest()[:8], "big")
    return (n + 0.5) / 2**64


def latency_of(body: dict, mean: float, sigma: float) -> float:
    if sigma <= 0:
        return mean
    z = NormalDist().inv_cdf(_unit(json.dumps(body["messages"], sort_keys=True)))
    return math.exp(math.log(mean) - sigma**2 / 2 + sigma * z)


def verdict(system: str, user: str, opening: str) -> dict:
    """The simulator: unmet for 1-4 replies (drawn per session), one item raised each time, then met."""
    k = len(re.findall(r"^\d+\. Does the reply", system, re.M))
    replies = user.count("[assistant]")
    needed = 1 + int(_unit(opening) * 4)
    if replies < needed:
        scores = [{"item": i, "score": 3} for i in range(1, k + 1)]
        message = "Hmm, that misses what usually works for me here."
        return {"scores": scores, "feedback_items": [(replies - 1) % k + 1], "message": message}
    scores = [{"item": i, "score": 9} for i in range(1, k + 1)]
    never = re.search(r"You have not yet alluded to item\(s\) ([\d, ]+)\.", user)
    if never:
        items = [int(x) for x in never.group(1).split(",")]
        return {"scores": scores, "feedback_items": items, "message": "Good, that is how it has to be here."}
    return {"scores": scores, "feedback_items": [], "message": ""}


def answer(body: dict):
    """The scripted server's answer to one generation prompt, one persona unlike the next."""
    from prefkit.pipelines.generation import offline
    from prefkit.pipelines.llm.types import LLMRequest
    from test_generation_openai import responder

    system = body["messages"][0]["content"]
    if system.startswith("You play a user"):
        user = body["messages"][1]["content"]
        opening = re.search(r"\[user\]\n(.+)", user)
        return verdict(system, user, opening.group(1) if opening else user)
    if system.startswith("You write realistic user personas"):  # one person per prompt
        n = int(_unit(body["messages"][-1]["content"]) * 10**6)
        return {
            "text": f"Sam Okafor (file {n}) is a staff nurse on a busy surgical ward who plans every "
            "shift in a notebook, wants to move into teaching, dislikes rushed handovers and walks "
            "to work each morning.",
            "occupation": "staff nurse",
        }
    if system.startswith("You help build a personalization benchmark"):  # factors per persona
        user = body["messages"][1]["content"]
        persona = re.search(r'The user:\n"(.+?)" \(occupation', user, re.S).group(1)
        n = int(re.search(r"exactly (\d+) context factors", user).group(1))
        context = {"persona": persona, "n_factors": n}
        request = LLMRequest(stage="factors", item="x", role="writer", messages=(), offline_context=context)
        rng = random.Random(int(_unit(persona) * 2**32))
        return offline.offline_factors(request, rng).model_dump(mode="json")
    if system.startswith("You write the story"):  # each persona's own opening requests
        answer = responder(body)
        ref = int(_unit(body["messages"][1]["content"]) * 10**6)
        for session in answer["sessions"]:
            session["opening_request"] += f" (ref {ref}-{session['index']})"
        return answer
    return responder(body)


def serve(port: int, mean: float, sigma: float, kind: str) -> None:  # pragma: no cover - its own process
    import asyncio
    import socket

    import uvicorn
    from fakeopenai import FakeOpenAI
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    if kind == "memories":
        from test_memories_extract import Responder

        respond = Responder()
    else:
        respond = answer
        answer({"messages": [{"content": ""}]})  # its imports, before any call is timed
    calls: list[tuple[float, float, str]] = []

    class Timed(FakeOpenAI):
        async def _chat(self, body, fault):
            start = time.monotonic()
            await asyncio.sleep(latency_of(body, mean, sigma))
            try:
                return await super()._chat(body, fault)
            finally:
                system = body["messages"][0]["content"]
                stage = next((s for p, s in STAGE_OF.items() if system.startswith(p)), "dialogues")
                calls.append((start, time.monotonic(), stage))

    async def log(_request):
        return JSONResponse(calls)

    fake = Timed(respond)
    app = fake.app()
    app.router.routes.append(Route("/_bench/calls", log))
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", backlog=1024)
    uvicorn.Server(config).run(sockets=[sock])


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str):
    with urllib.request.urlopen(url, timeout=10) as resp:
        return json.loads(resp.read())


def start_server(mean: float, sigma: float, kind: str = "generation") -> tuple[subprocess.Popen, str]:
    port = _free_port()
    me = [sys.executable, __file__, "--serve", str(port), "--mean", str(mean), "--sigma", str(sigma)]
    me += ["--kind", kind]
    proc = subprocess.Popen(me, cwd=ROOT)
    base = f"http://127.0.0.1:{port}"
    for _ in range(400):
        try:
            _get(f"{base}/_bench/calls")
            return proc, base
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("bench server did not start")


def in_flight(calls: list, start: float, end: float) -> float:
    """Mean calls open over [start, end]: the calls' overlap with the window / its length."""
    busy = sum(max(0.0, min(b, end) - max(a, start)) for a, b, _ in calls)
    return busy / max(end - start, 1e-9)


def run(personas: int, concurrency: int, mean: float, sigma: float) -> dict:
    from prefkit.curation.project import Project
    from prefkit.pipelines.generation.run import generate

    proc, base = start_server(mean, sigma)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            project = Project.init(Path(tmp) / "gen")
            toml = project.root / "prefkit.toml"
            text = toml.read_text(encoding="utf-8").replace('base_url = ""', f'base_url = "{base}/v1"')
            toml.write_text(re.sub(r"\nconcurrency = \d+", f"\nconcurrency = {concurrency}", text, count=1))
            project.close()
            project = Project(project.root)
            assert project.config.llm.concurrency == concurrency
            t0, cpu0 = time.monotonic(), time.process_time()
            reports = generate(project, backend="openai", personas=personas, seed=0)
            wall, cpu = time.monotonic() - t0, time.process_time() - cpu0
            instances = project.store.status()["instances"]
            project.close()
        calls = _get(f"{base}/_bench/calls")
    finally:
        proc.terminate()
        proc.wait()
    bad = [r.as_dict() for r in reports if r.dropped or r.failed]
    if bad or not calls:
        raise SystemExit(f"the run dropped or failed personas: {bad}")
    window = (
        min(a for a, _, s in calls if s == "checklists"),
        max(b for _, b, s in calls if s == "dialogues"),
    )
    ideal = sum(b - a for a, b, _ in calls) / concurrency
    whole = in_flight(calls, min(a for a, _, _ in calls), max(b for _, b, _ in calls))
    steady = in_flight(calls, *window)
    return {
        "latency": f"lognormal sigma {sigma}" if sigma > 0 else "constant",
        "calls": len(calls),
        "instances": instances,
        "wall_s": round(wall, 1),
        "client_cpu_s": round(cpu, 1),
        "ideal_s": round(ideal, 1),
        "wall_over_ideal": round(wall / ideal, 2),
        "mean_in_flight": round(whole, 1),
        "in_flight_checklists_to_dialogues": round(steady, 1),
        "of_concurrency": round(steady / concurrency, 2),
    }


def run_memories(concurrency: int, mean: float, sigma: float) -> dict:
    """``memories extract`` (candidates, then their validation) over the WildChat test fixture."""
    import wildchat_fixture
    from prefkit.curation.project import Project
    from prefkit.pipelines.llm import LLMLayer
    from prefkit.pipelines.memories.extract import ExtractionConfig, run_extraction

    proc, base = start_server(mean, sigma, "memories")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            project = Project.init(Path(tmp) / "mem")
            wildchat_fixture.ingest_clean(project.store, Path(tmp))
            llm = {"base_url": f"{base}/v1", "concurrency": concurrency}
            t0 = time.monotonic()
            with LLMLayer(project.store, llm, backend="openai", progress=False) as layer:
                report = run_extraction(project.store, layer, ExtractionConfig())
            wall = time.monotonic() - t0
            project.close()
        calls = _get(f"{base}/_bench/calls")
    finally:
        proc.terminate()
        proc.wait()
    if report.failed or not calls:
        raise SystemExit(f"memories extract failed {len(report.failed)} dialogue(s)")
    whole = in_flight(calls, min(a for a, _, _ in calls), max(b for _, b, _ in calls))
    ideal = sum(b - a for a, b, _ in calls) / concurrency
    return {
        "path": "memories extract",
        "latency": f"lognormal sigma {sigma}" if sigma > 0 else "constant",
        "dialogues": report.dialogues,
        "calls": len(calls),
        "wall_s": round(wall, 1),
        "ideal_s": round(ideal, 1),
        "mean_in_flight": round(whole, 1),
        "of_concurrency": round(whole / concurrency, 2),
    }


def peak_rss(personas: int) -> dict:
    """An offline run of ``personas`` personas in its own process: its wall and peak RSS."""
    code = (
        "import sys, time, tempfile; from pathlib import Path;"
        "from prefkit.curation.project import Project;"
        "from prefkit.pipelines.generation.run import generate;"
        "t = tempfile.mkdtemp(); p = Project.init(Path(t) / 'g'); t0 = time.monotonic();"
        f"generate(p, backend='offline', personas={personas}, seed=0);"
        "print(round(time.monotonic() - t0, 1), p.store.status()['instances'])"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    wall, instances = out.stdout.split()
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {
        "personas": personas,
        "instances": int(instances),
        "wall_s": float(wall),
        "peak_rss_mb": round(rss),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--personas", type=int, default=32)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--mean", type=float, default=0.5, help="mean latency per call, seconds")
    parser.add_argument("--sigma", type=float, default=0.8, help="the lognormal's sigma")
    parser.add_argument("--rss-personas", type=int, default=1000, help="0: skip the RSS run")
    parser.add_argument("--memories", action="store_true", help="also measure memories extract")
    parser.add_argument("--only-memories", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--kind", default="generation", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.mean, args.sigma, args.kind)
        return
    os.environ["OPENAI_API_KEY"] = KEY  # the loopback server takes any key
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; {args.personas} personas")
    if args.memories or args.only_memories:
        for s in (0.0, args.sigma):
            print(json.dumps(run_memories(args.concurrency, args.mean, s)))
    if args.only_memories:
        return
    rows = [run(args.personas, args.concurrency, args.mean, s) for s in (0.0, args.sigma)]
    for row in rows:
        print(json.dumps(row))
    print(json.dumps({"spread_slowdown": round(rows[1]["wall_s"] / rows[0]["wall_s"], 2)}))
    if args.rss_personas:
        print(json.dumps(peak_rss(args.rss_personas)))
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
