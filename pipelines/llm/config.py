"""Where the ``[llm]`` settings meet the environment: the endpoint and the API key.

The settings are ``[llm]`` itself (:class:`prefkit.schemas.config.LLMSection`); the environment is
:class:`prefkit.schemas.environment.Environment`. Endpoint and key resolution follow the openai SDK:
``base_url`` / ``api_key_env`` from the config, else ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``. The key
itself is only ever held in memory: this module must never put it into anything that is stored,
logged or printed (:func:`resolve_api_key` is called where the client is built).
"""

from __future__ import annotations

from urllib.parse import urlparse

from prefkit.schemas.config import DEFAULT_COMPLETION_TOKENS, LLM_ROLES, LLMConfigError, LLMSection
from prefkit.schemas.environment import Environment

ROLES = LLM_ROLES
DEFAULT_BASE_URL = "https://api.openai.com/v1"

__all__ = [
    "DEFAULT_COMPLETION_TOKENS",
    "ROLES",
    "LLMConfigError",
    "endpoint_host",
    "resolve_api_key",
    "resolve_base_url",
]


def resolve_base_url(settings: LLMSection, env: Environment) -> str:
    """``[llm] base_url``, else ``$OPENAI_BASE_URL``, else OpenAI's; refused unless http(s)."""
    url = settings.base_url or env.openai_base_url or DEFAULT_BASE_URL
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise LLMConfigError(f"[llm] base_url {endpoint_host(url)!r} is not an http(s) URL")
    return url


def resolve_api_key(settings: LLMSection, env: Environment) -> str:
    """The key from ``$<api_key_env>`` (default ``OPENAI_API_KEY``); a clear error when unset."""
    key = env.secret(settings.api_key_env)
    if not key:
        raise LLMConfigError(
            f"backend 'openai' needs an API key: set ${settings.api_key_env} "
            "(or point [llm] api_key_env at the variable holding it)"
        )
    return key


def endpoint_host(url: str) -> str:
    """Host only (no scheme, path, port, user or password): what provenance may record."""
    return urlparse(url).hostname or ""
