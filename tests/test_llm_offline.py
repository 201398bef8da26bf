"""The offline backend, templates, cost estimates and the rate limiter (no server involved)."""

from __future__ import annotations

import asyncio
import io
import random
import subprocess
import sys

import pytest
from prefkit.pipelines.llm import (
    LLMLayer,
    LLMRequest,
    OfflineGeneratorMissing,
    TemplateNotFound,
    load_template,
    register_offline,
    template_hash,
)
from prefkit.pipelines.llm.limits import RateLimiter, TokenBucket
from prefkit.pipelines.llm.types import BaseBackend
from pydantic import BaseModel


class Trait(BaseModel):
    trait: str
    score: int


class Unregistered(BaseModel):
    x: int


@register_offline(Trait)
def fake_trait(request: LLMRequest, rng: random.Random) -> Trait:
    return Trait(trait=request.offline_context.get("topic", "tea"), score=rng.randint(0, 10**9))


@register_offline("offline-chat")
def fake_chat(request: LLMRequest, rng: random.Random) -> str:
    return f"reply {rng.randint(0, 10**9)}"


def trait_requests(n: int = 5) -> list[LLMRequest]:
    return [
        LLMRequest(
            "traits", f"t{i}", "writer", (("user", f"trait {i}"),), Trait, offline_context={"topic": "jazz"}
        )
        for i in range(n)
    ]


def offline_run(project, seed: int, requests: list[LLMRequest]):
    with LLMLayer(project.store, project.config.llm, backend="offline", seed=seed, progress=False) as layer:
        return layer.run(requests)


def test_same_seed_same_outputs_and_another_seed_other_outputs(project, tmp_path):
    from prefkit.curation.project import Project

    other = Project.init(tmp_path / "other")
    try:
        a = [r.parsed for r in offline_run(project, 1, trait_requests())]
        b = [r.parsed for r in offline_run(other, 1, trait_requests())]
        c = [r.parsed for r in offline_run(project, 2, trait_requests())]
    finally:
        other.close()
    assert a == b
    assert [t.score for t in a] != [t.score for t in c]
    assert len({t.score for t in a}) == 5 and a[0].trait == "jazz"


def test_offline_answers_are_marked_offline_and_cost_nothing(project):
    [response] = offline_run(project, 0, trait_requests(1))
    prov = response.provenance
    assert prov.offline and prov.endpoint is None and prov.source == "generate.traits" and prov.seed == 0
    assert response.cost_usd == 0 and response.usage.completion_tokens > 0


def test_free_text_generators_are_found_by_stage_name(project):
    req = LLMRequest("offline-chat", "d1", "assistant", (("user", "hello"),))
    [response] = offline_run(project, 0, [req])
    assert response.ok and response.text.startswith("reply ")


def test_a_request_without_a_generator_fails_before_any_answer(project):
    reqs = trait_requests(2) + [LLMRequest("mystery", "m1", "judge", (("user", "?"),), Unregistered)]
    with pytest.raises(OfflineGeneratorMissing, match=r"register_offline\(Unregistered\)"):
        offline_run(project, 0, reqs)
    assert project.store.count("llm_cache") == 0


def test_offline_cache_is_never_served_to_the_openai_backend(project):
    from prefkit.pipelines.llm import cache_key

    req = trait_requests(1)[0]
    assert cache_key(req, "gpt-4o-mini", 0, offline=True) != cache_key(req, "gpt-4o-mini", 0)


def test_estimate_prices_uncached_requests_per_model(project):
    cfg = {
        **project.config.llm.model_dump(),
        "models": {"writer": "gpt-4o", "judge": "my-model"},
        "costs": {"my-model": {"input": 1.0, "output": 2.0}},
    }
    reqs = [
        LLMRequest("s", "a", "writer", (("user", "x" * 400),), max_tokens=100),
        LLMRequest("s", "b", "judge", (("user", "y" * 40),), max_tokens=1000),
    ]
    with LLMLayer(project.store, cfg, backend="offline", progress=False) as layer:
        est = layer.estimate(reqs)
    assert (est.calls, est.cached, est.prompt_tokens, est.completion_tokens) == (2, 0, 104 + 14, 1100)
    assert est.per_model["gpt-4o"].cost_usd == pytest.approx((104 * 2.50 + 100 * 10.00) / 1e6)
    assert est.per_model["my-model"].cost_usd == pytest.approx((14 * 1.0 + 1000 * 2.0) / 1e6)
    assert est.unpriced == []


def test_estimate_skips_cached_requests_and_flags_unpriced_models(project):
    cfg = {
        **project.config.llm.model_dump(),
        "models": {"writer": "homebrew-7b"},
        "completion_tokens": {"traits": 42},
    }
    with LLMLayer(project.store, cfg, backend="offline", progress=False) as layer:
        layer.run(trait_requests(3))
        est = layer.estimate(trait_requests(5))
    assert (est.calls, est.cached, est.completion_tokens, est.cost_usd) == (2, 3, 84, 0.0)
    assert est.unpriced == ["homebrew-7b"]


def test_templates_load_from_the_stage_package_with_a_hash(tmp_path, monkeypatch):
    pkg = tmp_path / "stagepkg"
    (pkg / "prompts").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "stage.py").write_text("")
    (pkg / "prompts" / "persona.jinja2").write_text("Describe {{ name }}.\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    template = load_template("stagepkg.stage", "persona")
    assert template.render(name="Ada") == "Describe Ada.\n"
    assert template.hash == template_hash("Describe {{ name }}.\n") and len(template.hash) == 12
    with pytest.raises(TemplateNotFound):
        load_template("stagepkg", "nope")
    sys.modules.pop("stagepkg.stage", None)
    sys.modules.pop("stagepkg", None)


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_token_bucket_allows_a_burst_then_paces_at_the_rate():
    clock = FakeClock()
    bucket = TokenBucket(per_minute=600, clock=clock)  # 10/s, burst of 10
    for _ in range(10):
        assert bucket.wait_time(1) == 0
        bucket.take(1)
    assert bucket.wait_time(1) == pytest.approx(0.1)
    clock.now = 0.5
    assert bucket.wait_time(5) == 0 and bucket.wait_time(6) == pytest.approx(0.1)


def test_token_bucket_settles_real_usage_and_caps_oversized_costs():
    clock = FakeClock()
    bucket = TokenBucket(per_minute=6000, clock=clock)  # 100 tokens/s, burst 100
    bucket.take(50)
    bucket.settle(estimated=50, actual=150)  # the call used more than reserved
    assert bucket.level == pytest.approx(-50)
    assert bucket.wait_time(10) == pytest.approx(0.6)
    clock.now = 10
    assert bucket.wait_time(10_000) == 0  # above capacity: waits only for a full bucket


def test_rate_limiter_paces_requests_per_minute():
    limiter = RateLimiter(requests_per_minute=1200)  # 20/s, burst 20

    async def go() -> float:
        loop = asyncio.get_running_loop()
        start = loop.time()
        await asyncio.gather(*(limiter.acquire(10) for _ in range(30)))
        return loop.time() - start

    elapsed = asyncio.run(go())
    assert 0.45 <= elapsed < 1.5  # 20 at once, then 10 more at 20/s


class EchoBackend(BaseBackend):
    """A user-supplied backend: ``complete``, with BaseBackend's defaults for the optional parts."""

    name = "echo"
    offline = False

    async def complete(self, request, model, seed):
        from prefkit.pipelines.llm import Usage

        return f"{model}:{request.messages[-1][1]}", Usage(3, 2, 0), {"endpoint": "echo.local"}


def test_any_object_implementing_the_backend_protocol_plugs_in(project):
    req = LLMRequest("echoes", "e1", "judge", (("user", "ping"),))
    with LLMLayer(project.store, project.config.llm, backend=EchoBackend(), progress=False) as layer:
        [response] = layer.run([req])
    assert response.ok and response.text == "gpt-4o-mini:ping"
    assert response.provenance.endpoint == "echo.local" and response.cost_usd > 0


def test_sync_run_works_inside_a_running_event_loop(project):
    async def notebook_cell():
        with LLMLayer(project.store, project.config.llm, backend="offline", progress=False) as layer:
            return layer.run(trait_requests(2))

    responses = asyncio.run(notebook_cell())
    assert [r.ok for r in responses] == [True, True] and responses[0].parsed.trait == "jazz"


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_on_a_terminal_shows_ok_failed_cached_and_tokens(project, monkeypatch):
    terminal = FakeTTY()
    monkeypatch.setattr(sys, "stderr", terminal)
    with LLMLayer(project.store, project.config.llm, backend="offline", progress=True) as layer:
        layer.run(trait_requests(2), desc="traits")
        layer.run(trait_requests(3), desc="traits")
    drawn = terminal.getvalue()
    assert "traits: 100%" in drawn and "3/3" in drawn
    assert "ok=3 failed=0 cached=2" in drawn and "tok=" in drawn


def test_batch_mode_on_a_backend_without_a_batch_api_is_a_clear_error(project):
    from prefkit.pipelines.llm import LLMConfigError

    req = LLMRequest("echoes", "e1", "judge", (("user", "ping"),))
    with LLMLayer(project.store, project.config.llm, backend=EchoBackend(), progress=False) as layer:
        with pytest.raises(LLMConfigError, match="no Batch API"):
            layer.run([req], batch=True)
        assert layer.run([req])[0].ok  # the same request runs live


def test_a_backend_missing_part_of_the_protocol_is_refused_naming_it(project):
    from prefkit.pipelines.llm import LLMConfigError

    class Bare:
        name, offline = "bare", False

        async def complete(self, request, model, seed):
            raise AssertionError("never called")

    with pytest.raises(LLMConfigError, match="Bare lacks host, check, scrub, aclose"):
        LLMLayer(project.store, backend=Bare(), progress=False)


def test_a_stage_s_offline_answers_are_found_by_the_request_not_by_a_side_effect_import():
    """The backend imports the module a request names (``offline_answers``, set from the template's
    package); nothing imports a stage's ``offline.py`` for its registrations, and a request naming none
    has no answer."""
    script = (
        "import sys\n"
        "from prefkit.pipelines.eval.alpsbench import model_request\n"
        "from prefkit.pipelines.llm.offline import OfflineGeneratorMissing, generator_for\n"
        "from prefkit.pipelines.llm.types import LLMRequest\n"
        "from prefkit.schemas.evaluation import MemoryList\n"
        "assert 'prefkit.pipelines.eval.offline' not in sys.modules, 'imported for its side effect'\n"
        "bare = LLMRequest('eval', 'x', 'assistant', (('user', 'hi'),), MemoryList)\n"
        "try:\n"
        "    generator_for(bare)\n"
        "    raise SystemExit('answered without its module')\n"
        "except OfflineGeneratorMissing:\n"
        "    pass\n"
        "named = LLMRequest('eval', 'x', 'assistant', (('user', 'hi'),), MemoryList,\n"
        "                   offline_answers='prefkit.pipelines.eval.offline')\n"
        "print(generator_for(named).__module__)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "prefkit.pipelines.eval.offline"


def test_a_templated_request_names_its_package_s_offline_answers():
    from prefkit.pipelines.eval.prompting import build_request
    from prefkit.schemas.evaluation import MemoryList

    request = build_request(
        "eval.x", "i", "assistant", "alps_task1", MemoryList, {"dialogue": [], "query": ""}
    )
    assert request.offline_answers == "prefkit.pipelines.eval.offline"
