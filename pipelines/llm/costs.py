"""Prices per model and cost estimates made before any call.

A small built-in table of US$ per 1M tokens for common OpenAI models (list prices; check your
provider) that ``[llm.costs]`` in ``prefkit.toml`` overrides or extends::

    [llm.costs]
    "my-local-model" = { input = 0.0, output = 0.0 }
    "gpt-4o-mini" = { input = 0.15, cached_input = 0.075, output = 0.60 }

A model with no price costs 0 and is listed in ``Estimate.unpriced`` so a missing price is visible,
never a silent zero. This module must never make a call or read the store.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import resources

from prefkit.pipelines.llm.types import Usage

#: US$ per 1M tokens: (input, cached input, output), from prices.toml beside this module.
BUILTIN_PRICES: dict[str, tuple[float, float, float]] = {
    model: (price[0], price[1], price[2])
    for model, price in tomllib.loads(
        resources.files(__package__).joinpath("prices.toml").read_text("utf-8")
    ).items()
}


@dataclass(frozen=True)
class Price:
    input: float
    cached_input: float
    output: float

    def cost(self, usage: Usage) -> float:
        fresh = max(0, usage.prompt_tokens - usage.cached_tokens)
        return (
            fresh * self.input
            + usage.cached_tokens * self.cached_input
            + usage.completion_tokens * self.output
        ) / 1e6


class PriceTable:
    """Built-in prices overlaid with ``[llm.costs]``."""

    def __init__(self, overrides: dict[str, dict[str, float]] | None = None):
        self.prices = {m: Price(*p) for m, p in BUILTIN_PRICES.items()}
        for model, spec in (overrides or {}).items():
            base = self.prices.get(model, Price(0.0, 0.0, 0.0))
            inp = float(spec.get("input", base.input))
            self.prices[model] = Price(
                inp, float(spec.get("cached_input", inp)), float(spec.get("output", base.output))
            )

    def price(self, model: str) -> Price | None:
        if model in self.prices:
            return self.prices[model]
        # Dated snapshots ("gpt-4o-mini-2024-07-18") share their family's price.
        family = max((m for m in self.prices if model.startswith(m + "-")), key=len, default=None)
        return self.prices.get(family) if family else None

    def cost(self, model: str, usage: Usage) -> float:
        price = self.price(model)
        return 0.0 if price is None else price.cost(usage)


@dataclass
class ModelEstimate:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0


@dataclass
class Estimate:
    """What a set of requests will cost; ``cached`` requests are already answered and cost nothing."""

    calls: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    per_model: dict[str, ModelEstimate] = field(default_factory=dict)
    unpriced: list[str] = field(default_factory=list)

    def add(self, model: str, prompt: int, completion: int, cost: float) -> None:
        m = self.per_model.setdefault(model, ModelEstimate())
        for target in (self, m):
            target.calls += 1
            target.prompt_tokens += prompt
            target.completion_tokens += completion
            target.cost_usd += cost

    def as_dict(self) -> dict:
        return {
            "calls": self.calls,
            "cached": self.cached,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost_usd": round(self.cost_usd, 6),
            "per_model": {k: vars(v) | {"cost_usd": round(v.cost_usd, 6)} for k, v in self.per_model.items()},
            "unpriced": self.unpriced,
        }


def estimate_calls(table: PriceTable, calls: Iterable[tuple[str, int, int]], cached: int = 0) -> Estimate:
    """Price ``(model, prompt_tokens, completion_tokens)`` triples."""
    est = Estimate(cached=cached)
    for model, prompt, completion in calls:
        est.add(model, prompt, completion, table.cost(model, Usage(prompt, completion, 0)))
        if table.price(model) is None and model not in est.unpriced:
            est.unpriced.append(model)
    return est
