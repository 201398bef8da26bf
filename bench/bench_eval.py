"""Benchmark of evaluation: scoring 10,000 CUPID instances from a stored run, and the LLM layer's
overhead during a 2,000-call CUPID inference eval against a bare AsyncOpenAI loop on the loopback server.

    .venv/bin/python bench/bench_eval.py [--instances 10000] [--calls 2000] [--concurrency 32] [--latency 0.2]

Part 1 stores a run of N instances (prediction + judge labels of every gold item and inferred item) in a
project, then times ``build_report`` (read the items back, validate, pool P/R/F1 per type and position)
and ``eval score`` of the same predictions from files. Part 2 starts the fake OpenAI server
(tests/fakeopenai.py) in its own process with a fixed latency and this file's responder, then runs the
same two phases twice per round — inference, then the judge's pair and decomposition calls — through
``run_cupid`` (layer: cache, ledger, validation, provenance, stored run) and through a bare semaphore
loop over ``chat.completions.parse`` with the same messages. Only 127.0.0.1 is contacted.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import functools
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import openai  # noqa: E402
from bench_llm import KEY, measure, start_server, stats  # noqa: E402
from prefkit.curation.project import Project  # noqa: E402
from prefkit.curation.store import EvalRun  # noqa: E402
from prefkit.pipelines.eval import CupidOptions, build_report, cupid, run_cupid, score_cupid_file  # noqa: E402
from prefkit.pipelines.eval.cupid_metrics import key_name  # noqa: E402
from prefkit.pipelines.eval.release import load_cupid  # noqa: E402
from prefkit.pipelines.llm import LLMLayer  # noqa: E402

TYPES = ("consistent", "contrastive", "changing")
PREFKIT = CupidOptions(protocol="prefkit")
COVERAGES = ("fully", "partially", "not_covered")


def responder(body: dict) -> dict | str:
    """The loopback server's answers: inference, pair coverage, decomposition (by the system prompt)."""
    system = body["messages"][0]["content"]
    if system.startswith("You are a personal assistant reviewing"):
        return {"preference": "Short answers with bullet points and a friendly tone"}
    if system.startswith("You check whether"):
        return {"reason": "states it", "coverage": COVERAGES[len(body["messages"][-1]["content"]) % 3]}
    if system.startswith("You compare"):
        return {
            "items": [
                {"item": "short answers", "coverage": "fully"},
                {"item": "friendly", "coverage": "partially"},
            ]
        }
    answer = (
        (body.get("response_format") or {}).get("json_schema", {}).get("schema", {}).get("properties", {})
    )
    if "answer" in answer:  # a declared kind's model call: the target's first label
        return {"answer": (answer["answer"].get("enum") or ["answerable"])[0]}
    return {"reason": "ok", "score": 7}


def instance(i: int, sessions: int = 4) -> dict:
    pid, itype = f"p{i // 3:05d}", TYPES[i % 3]
    factor = f"factor {i}"
    prior = [
        {
            "context_factor": factor if s == i % sessions else f"other {s}",
            "contextual_preference": f"preference {i}-{s}",
            "dialogue": [
                {"role": "user", "content": f"Request {s} of {pid}: help me plan item {i}."},
                {"role": "assistant", "content": "Here is a long and detailed plan with many sections."},
                {"role": "user", "content": "Shorter please, and use bullet points."},
            ],
        }
        for s in range(sessions)
    ]
    return {
        "persona_id": pid,
        "instance_type": itype,
        "current_request": f"Plan my next outing ({i}).",
        "current_context_factor": factor,
        "current_contextual_preference": f"Prefers short bulleted answers ({i})",
        "current_checklist": [
            f"Is the reply short ({i})?",
            f"Does it use bullets ({i})?",
            f"Is it friendly ({i})?",
        ],
        "prior_interactions": prior,
    }


def write_release(path: Path, n: int) -> Path:
    path.write_text("".join(json.dumps(instance(i)) + "\n" for i in range(n)), encoding="utf-8")
    return path


# -- part 1: scoring ----------------------------------------------------------------------------------------------
def scoring(n: int, tmp: Path) -> None:
    release = write_release(tmp / "cupid_10k.jsonl", n)
    ref, instances = load_cupid(release)
    project = Project.init(tmp / "score")
    items, lines = [], []
    for k, (key, inst) in enumerate(sorted(instances.items())):
        labels = {
            "gold": [
                {"item": it, "coverage": COVERAGES[(k + j) % 3]}
                for j, it in enumerate(inst.current_checklist)
            ],
            "inferred": [
                {"item": "short", "coverage": "fully"},
                {"item": "formal", "coverage": "not_covered"},
            ],
        }
        pred = {
            "persona_id": key[0],
            "instance_type": key[1],
            "inferred": "short and formal",
            "labels": labels,
        }
        gold = {
            "instance_type": inst.instance_type,
            "checklist": list(inst.current_checklist),
            "sessions_ago": 1 + k % 4,
        }
        items.append((key_name(key), inst.instance_type, {"gold": gold, "prediction": pred}))
        lines.append(json.dumps(pred))
    run = EvalRun(
        run_id="cupid-inference-bench",
        benchmark="cupid",
        task="inference",
        model="m",
        judge_model="j",
        backend="openai",
        offline=False,
        release_dir=str(release),
        release_name=None,
        release_version=None,
        release_digest=ref.digest,
        config_name="cupid",
        settings={},
        prompts={},
    )
    project.store.eval.run_start(run)
    _, wall, _ = measure(lambda: project.store.eval.run_finish(run.run_id, items, {"rows": []}))
    print(f"stored a run of {n} instances (predictions + judge labels) in {wall:.2f} s")
    walls, cpus = [], []
    for _ in range(3):
        report, wall, cpu = measure(lambda: build_report(project.store, run.run_id))
        walls.append(wall)
        cpus.append(cpu)
    overall = next(r for r in report["rows"] if r["group"] == "overall")
    print(
        f"score {n} stored instances (read the run back + pool P/R/F1, build_report): median {statistics.median(walls):.2f} s "
        f"(runs {', '.join(f'{w:.2f}' for w in walls)}; CPU {', '.join(f'{c:.2f}' for c in cpus)}; goal <= 2 s)  F1 {overall['f1']}"
    )
    # the same items scored by CUPID's official arithmetic (its failure accounting and the strict line)
    official = dataclasses.replace(
        run, run_id="cupid-inference-bench-official", settings={"protocol": "cupid-official"}
    )
    project.store.eval.run_start(official)
    project.store.eval.run_finish(official.run_id, items, {"rows": []})
    walls, cpus = [], []
    for _ in range(3):
        report, wall, cpu = measure(lambda: build_report(project.store, official.run_id))
        walls.append(wall)
        cpus.append(cpu)
    overall = next(r for r in report["rows"] if r["group"] == "overall" and r["task"] == "inference")
    print(
        f"score {n} stored instances, protocol cupid-official (official + strict lines): median {statistics.median(walls):.2f} s "
        f"(runs {', '.join(f'{w:.2f}' for w in walls)}; CPU {', '.join(f'{c:.2f}' for c in cpus)}; goal <= 2 s)  F1 {overall['f1']}"
    )
    preds = tmp / "preds.jsonl"
    preds.write_text("\n".join(lines) + "\n", encoding="utf-8")
    _, wall, _ = measure(lambda: score_cupid_file(release, "cupid", preds, None, protocol="prefkit"))
    print(
        f"prefkit eval score of the same predictions from files (incl. reading {n} release rows): {wall:.2f} s"
    )
    project.close()


def declared_scoring(n: int, tmp: Path) -> None:
    """``eval run --predictions`` on n memory-QA items (the example of docs/eval.md), each target type:
    the release and the predictions read and checked, the run stored, scored with its bootstrap CIs."""
    from prefkit.curation.annotation.declared import DeclaredKind, KindDeclaration, read_declaration
    from prefkit.pipelines.eval import run_declared

    example = ROOT / "pipelines" / "examples" / "memory_qa"
    decl = read_declaration(example / "memory_qa.toml")
    base = [json.loads(x) for x in (example / "items.jsonl").read_text().splitlines()]
    answers = {}
    for row in map(json.loads, (example / "labels.jsonl").read_text().splitlines()):
        answers.setdefault(row["item_id"], row["values"])
    rel = tmp / "declared"
    rows = [{**base[i % 6], "id": f"m{i}", "answers": answers[base[i % 6]["id"]]} for i in range(n)]
    (rel / "data" / "memory_qa").mkdir(parents=True)
    (rel / "data" / "memory_qa" / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    project = Project.init(tmp / "declared_project")
    for name in ("verdict", "topics", "confidence", "order", "evidence"):
        data = decl.model_dump(mode="json")
        data["evaluation"]["target"] = name
        kind = DeclaredKind(KindDeclaration.model_validate(data), tmp)
        preds = tmp / f"{name}.jsonl"
        # each item answered with the next one's reference (a span: its own, offsets fit only its text)
        other = rows if name == "evidence" else rows[1:] + rows[:1]
        lines = [
            {"id": r["id"], "answer": o["answers"][name]}
            for r, o in zip(rows, other, strict=True)
            if name in r["answers"]
        ]
        preds.write_text("".join(json.dumps(x) + "\n" for x in lines))
        with LLMLayer(project.store, backend="offline", progress=False) as layer:
            result, wall, cpu = measure(
                functools.partial(run_declared, project.store, layer, rel, kind, None, preds)
            )
        first = result.rows[0]
        print(
            f"eval run --predictions, {n} items, target {name} ({kind.questions[name].type}): {wall:.2f} s "
            f"(CPU {cpu:.2f} s; goal <= 2 s)  {first['metric']} {first['value']:.3f} "
            f"[{first['ci_low']:.3f}, {first['ci_high']:.3f}]"
        )
    project.close()


def declared_release(tmp: Path, n: int):
    """A memory-QA release of ``n`` items with a decided ``verdict`` (the example of docs/eval.md)."""
    from prefkit.curation.annotation.declared import DeclaredKind, read_declaration

    example = ROOT / "pipelines" / "examples" / "memory_qa"
    kind = DeclaredKind(read_declaration(example / "memory_qa.toml"), tmp)
    base = [json.loads(x) for x in (example / "items.jsonl").read_text().splitlines()]
    # each item its own question: the same prompt twice is one call (the layer's cache)
    rows = [
        {**b, "id": f"m{i}", "question": f"{b['question']} (#{i})", "answers": {"verdict": "answerable"}}
        for i, b in ((i, base[i % len(base)]) for i in range(n))
    ]
    rel = tmp / f"declared_model_{n}"
    (rel / "data" / "memory_qa").mkdir(parents=True)
    (rel / "data" / "memory_qa" / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rel, kind


async def bare_declared(base_url: str, requests: list, concurrency: int) -> int:
    """The declared kind's model calls (the same messages and answer schema) through a bare loop."""
    client = openai.AsyncOpenAI(base_url=base_url, api_key=KEY, max_retries=4, timeout=60)
    semaphore = asyncio.Semaphore(concurrency)

    async def call(request):
        async with semaphore:
            completion = await client.chat.completions.parse(
                model="m",
                messages=request.chat_messages(),
                response_format=request.response_model,
                temperature=request.temperature,
                seed=0,
            )
            return completion.choices[0].message.parsed

    answers = await asyncio.gather(*(call(r) for r in requests))
    await client.close()
    return sum(1 for a in answers if a is not None)


def declared_rounds(args, base: str, tmp: Path) -> None:
    """``eval run`` of a declared kind through the layer against the same calls through a bare loop."""
    from prefkit.pipelines.eval import declared, run_declared

    rel, kind = declared_release(tmp, args.calls)
    kind = declared.evaluated(kind)
    _ref, items, _split = declared.load_declared(rel, kind, None)
    requests = [declared.model_request(kind, items[i]) for i in sorted(items)]
    print(f"declared eval run: {len(requests)} calls (target verdict), concurrency {args.concurrency}")
    bare, layered = [], []
    for rnd in range(args.rounds):
        ok, wall, _ = measure(lambda: asyncio.run(bare_declared(f"{base}/v1", requests, args.concurrency)))
        bare.append(wall)
        project = Project.init(tmp / f"declared_layer{rnd}")
        cfg = {"base_url": f"{base}/v1", "concurrency": args.concurrency, "models": {"assistant": "m"}}
        before = stats(base)["chat"]
        with LLMLayer(project.store, cfg, backend="openai", seed=rnd, progress=False) as layer:
            result, lwall, _ = measure(functools.partial(run_declared, project.store, layer, rel, kind))
        layered.append(lwall)
        first = result.rows[0]
        print(
            f"  round {rnd + 1}: bare {wall:6.2f} s (ok={ok})  prefkit eval run {lwall:6.2f} s "
            f"(http={stats(base)['chat'] - before})  {first['metric']} {first['value']:.3f}"
        )
        project.close()
    print(
        f"declared throughput ratio layer/bare: best walls {min(bare) / min(layered):.3f}, "
        f"median walls {statistics.median(bare) / statistics.median(layered):.3f}  (goal >= 0.95)"
    )


# -- part 2: layer overhead ---------------------------------------------------------------------------------------
async def bare_eval(base_url: str, instances: dict, concurrency: int) -> int:
    """What a careful script does without prefkit: inference calls, then the judge's calls, each
    through a semaphore around chat.completions.parse, with the same messages as the layer."""
    client = openai.AsyncOpenAI(base_url=base_url, api_key=KEY, max_retries=4, timeout=60)
    semaphore = asyncio.Semaphore(concurrency)

    async def call(request, model: str):
        async with semaphore:
            completion = await client.chat.completions.parse(
                model=model,
                messages=request.chat_messages(),
                response_format=request.response_model,
                temperature=request.temperature,
                max_tokens=request.max_tokens,
                seed=0,
            )
            return completion.choices[0].message.parsed

    keys = sorted(instances)
    inferred = await asyncio.gather(*(call(cupid.infer_request(k, instances[k], "none"), "m") for k in keys))
    judge = [
        r
        for k, a in zip(keys, inferred, strict=True)
        for r in cupid.match_requests(k, instances[k], a.preference)
    ]
    labels = await asyncio.gather(*(call(r, "j") for r in judge))
    await client.close()
    return len(inferred) + sum(1 for x in labels if x is not None)


def eval_rounds(args, base: str, tmp: Path) -> None:
    per_instance = 1 + 3 + 1
    n_inst = args.calls // per_instance
    release = write_release(tmp / f"cupid_{n_inst}.jsonl", n_inst)
    _ref, instances = load_cupid(release)
    print(
        f"eval run: {n_inst} instances x (1 inference + 3 pair labels + 1 decomposition) = "
        f"{n_inst * per_instance} calls, concurrency {args.concurrency}, server latency {args.latency * 1000:.0f} ms"
    )
    bare, layered = [], []
    for rnd in range(args.rounds):
        print(f"round {rnd + 1}")
        ok, wall, cpu = measure(lambda: asyncio.run(bare_eval(f"{base}/v1", instances, args.concurrency)))
        bare.append((wall, cpu))
        print(f"  bare AsyncOpenAI loop : {wall:6.2f} s  {ok / wall:7.1f} calls/s  cpu {cpu:5.2f} s  ok={ok}")
        project = Project.init(tmp / f"layer{rnd}")
        cfg = {
            "base_url": f"{base}/v1",
            "concurrency": args.concurrency,
            "models": {"assistant": "m", "judge": "j"},
        }
        before = stats(base)["chat"]
        with LLMLayer(project.store, cfg, backend="openai", seed=rnd, progress=False) as layer:
            # prefkit's own steps: the bare loop below sends the same requests (cupid.infer_request, ...)
            run = functools.partial(run_cupid, project.store, layer, release, "cupid", PREFKIT)
            result, wall, cpu = measure(run)
            http = stats(base)["chat"] - before
            layered.append((wall, cpu))
            overall = next(r for r in result.rows if r["group"] == "overall")
            print(
                f"  prefkit eval (layer)  : {wall:6.2f} s  {http / wall:7.1f} calls/s  cpu {cpu:5.2f} s  "
                f"http={http}  F1={overall['f1']}"
            )
            if rnd == args.rounds - 1:
                before = stats(base)["chat"]
                _, again, _ = measure(run)
                print(
                    f"  rerun of the same eval: {again:.2f} s, http requests={stats(base)['chat'] - before} (all cached)"
                )
        project.close()
    best = min(w for w, _ in bare) / min(w for w, _ in layered)
    median = statistics.median(w for w, _ in bare) / statistics.median(w for w, _ in layered)
    print(f"throughput ratio layer/bare: best walls {best:.3f}, median walls {median:.3f}  (goal >= 0.95)")
    calls = n_inst * per_instance
    b = statistics.mean(c for _, c in bare) / calls * 1000
    la = statistics.mean(c for _, c in layered) / calls * 1000
    print(
        f"CPU per call (mean of rounds): layer {la:.2f} ms, bare {b:.2f} ms, overhead {la - b:+.2f} ms/call"
    )
    print(f"fake server: at most {stats(base)['max_in_flight']} requests in flight")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--skip-scoring", action="store_true")
    parser.add_argument("--scoring-only", action="store_true", help="Part 1 only (no server, no calls).")
    args = parser.parse_args()
    print(f"nproc={os.cpu_count()}")
    with tempfile.TemporaryDirectory() as tmp:
        if not args.skip_scoring:
            scoring(args.instances, Path(tmp))
            declared_scoring(args.instances, Path(tmp))
        if args.scoring_only:
            return
        os.environ["OPENAI_API_KEY"] = KEY
        proc, base = start_server(args.latency, responder=f"{Path(__file__).resolve()}:responder", wait_s=60)
        try:
            eval_rounds(args, base, Path(tmp))
            declared_rounds(args, base, Path(tmp))
        finally:
            proc.terminate()
            proc.wait(timeout=10)


if __name__ == "__main__":
    main()
