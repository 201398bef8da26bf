"""The ``[llm]`` section of ``prefkit.toml`` read into one typed settings object.

Endpoint and key resolution follow the openai SDK: ``base_url`` / ``api_key_env`` from the config,
else ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``. The key itself is only ever held in memory: this module
must never put it into anything that is stored, logged or printed (``LLMSettings`` has no key field;
:func:`resolve_api_key` is called where the client is built).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

from prefkit.schemas.common import PrefkitError, validation_line
from prefkit.schemas.config import LLMSection
from pydantic import ValidationError

ROLES = ("writer", "user_simulator", "assistant", "judge")
DEFAULT_COMPLETION_TOKENS = 500


class LLMConfigError(PrefkitError):
    """The LLM configuration cannot work (no key, no endpoint, unknown role, bad value)."""


@dataclass(frozen=True)
class LLMSettings:
    base_url: str = ""
    api_key_env: str = "OPENAI_API_KEY"
    models: dict[str, str] = field(default_factory=lambda: {r: "gpt-4o-mini" for r in ROLES})
    concurrency: int = 8
    requests_per_minute: float = 0
    tokens_per_minute: float = 0
    timeout_s: float = 60
    max_retries: int = 4
    structured: str = "json_schema"  # or "json_mode" for servers without json_schema support
    repair_attempts: int = 1
    costs: dict[str, dict[str, float]] = field(default_factory=dict)
    completion_tokens: dict[str, int] = field(default_factory=dict)  # per-stage estimate default
    batch_poll_s: float = 30.0
    batch_wait_s: float = 86_400.0  # give up waiting (the batch id stays persisted for a resume)

    @classmethod
    def from_config(cls, llm_config: LLMSection | dict[str, Any] | None) -> LLMSettings:
        """Settings from ``[llm]`` (``project.config.llm``); a dict is checked like ``prefkit.toml``, so
        an unknown or mistyped key is an :class:`LLMConfigError` naming it."""
        if not isinstance(llm_config, LLMSection):
            try:
                llm_config = LLMSection.model_validate(llm_config or {})
            except ValidationError as exc:
                raise LLMConfigError(f"[llm] {validation_line(exc)}") from None
        cfg = llm_config
        if cfg.structured not in ("json_schema", "json_mode"):
            raise LLMConfigError(
                f"[llm] structured must be 'json_schema' or 'json_mode', not {cfg.structured!r}"
            )
        settings = cls(
            base_url=cfg.base_url,
            api_key_env=cfg.api_key_env or "OPENAI_API_KEY",
            models={**{r: "gpt-4o-mini" for r in ROLES}, **cfg.models},
            concurrency=cfg.concurrency,
            requests_per_minute=cfg.requests_per_minute,
            tokens_per_minute=cfg.tokens_per_minute,
            timeout_s=cfg.timeout_s,
            max_retries=cfg.max_retries,
            structured=cfg.structured,
            repair_attempts=cfg.repair_attempts,
            costs={k: dict(v) for k, v in cfg.costs.items()},
            completion_tokens=dict(cfg.completion_tokens),
            batch_poll_s=cfg.batch_poll_s,
            batch_wait_s=cfg.batch_wait_s,
        )
        settings.check()
        return settings

    def check(self) -> None:
        if self.concurrency < 1:
            raise LLMConfigError(f"[llm] concurrency must be at least 1, not {self.concurrency}")
        if self.max_retries < 0 or self.repair_attempts < 0:
            raise LLMConfigError("[llm] max_retries and repair_attempts must be >= 0")
        if self.timeout_s <= 0:
            raise LLMConfigError(f"[llm] timeout_s must be positive, not {self.timeout_s}")

    def model_for(self, role: str) -> str:
        try:
            return self.models[role]
        except KeyError:
            raise LLMConfigError(
                f'no model configured for role {role!r}; set [llm.models] {role} = "..."'
            ) from None

    def resolve_base_url(self) -> str:
        url = self.base_url or os.environ.get("OPENAI_BASE_URL", "") or "https://api.openai.com/v1"
        parsed = urlparse(url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise LLMConfigError(f"[llm] base_url {endpoint_host(url)!r} is not an http(s) URL")
        return url

    def completion_budget(self, stage: str, max_tokens: int | None) -> int:
        """Completion tokens to reserve/estimate for a request with no known answer yet."""
        if max_tokens:
            return max_tokens
        return self.completion_tokens.get(stage, DEFAULT_COMPLETION_TOKENS)


def resolve_api_key(settings: LLMSettings) -> str:
    """The key from ``$<api_key_env>`` (default ``OPENAI_API_KEY``); a clear error when unset."""
    key = os.environ.get(settings.api_key_env, "")
    if not key:
        raise LLMConfigError(
            f"backend 'openai' needs an API key: set ${settings.api_key_env} "
            "(or point [llm] api_key_env at the variable holding it)"
        )
    return key


def endpoint_host(url: str) -> str:
    """Host only (no scheme, path, port, user or password): what provenance may record."""
    return urlparse(url).hostname or ""
