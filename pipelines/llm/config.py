"""Where the ``[llm]`` settings meet the environment: the endpoint and the API key.

The settings are ``[llm]`` itself (:class:`prefkit.schemas.config.LLMSection`); the environment is
:class:`prefkit.schemas.environment.Environment`. Endpoint and key resolution follow the openai SDK:
``base_url`` / ``api_key_env`` from the config, else ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``. A server
on this machine or the local network (``localhost``, a loopback or private IP literal) needs no key. The key
itself is only ever held in memory: this module must never put it into anything that is stored,
logged or printed (:func:`resolve_api_key` is called where the client is built).
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlparse

from prefkit.schemas.config import LLMConfigError, LLMSection
from prefkit.schemas.environment import Environment

DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: What is sent as the key to a local server when no key is set (local servers ignore it).
NO_KEY = "sk-no-key-local-server"


def resolve_base_url(settings: LLMSection, env: Environment) -> str:
    """``[llm] base_url``, else ``$OPENAI_BASE_URL``, else OpenAI's; refused unless http(s)."""
    url = settings.base_url or env.openai_base_url or DEFAULT_BASE_URL
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise LLMConfigError(f"[llm] base_url {endpoint_host(url)!r} is not an http(s) URL")
    return url


def resolve_api_key(settings: LLMSection, env: Environment, base_url: str) -> str | None:
    """The key from ``$<api_key_env>`` (default ``OPENAI_API_KEY``); ``None`` for a local server without
    one (:func:`is_local`); a clear error when a hosted one has none."""
    key = env.secret(settings.api_key_env)
    if not key and is_local(base_url):
        return None
    if not key:
        raise LLMConfigError(
            f"backend 'openai' needs an API key: set ${settings.api_key_env} "
            "(or point [llm] api_key_env at the variable holding it)"
        )
    return key


def is_local(url: str) -> bool:
    """A server on this machine or the local network: ``localhost`` or a loopback/private IP literal."""
    host = urlparse(url).hostname or ""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False  # a name: hosted unless it is localhost (names are not resolved here)
    return address.is_loopback or address.is_private or address.is_link_local


def endpoint_id(url: str) -> str:
    """Scheme, host, port and path of an endpoint, without user, password or query (what the project may
    remember an endpoint by)."""
    p = urlparse(url)
    port = f":{p.port}" if p.port else ""
    return f"{p.scheme}://{p.hostname or ''}{port}{p.path.rstrip('/')}"


def endpoint_host(url: str) -> str:
    """Host only (no scheme, path, port, user or password): what provenance may record."""
    return urlparse(url).hostname or ""


def with_models(settings: LLMSection, **roles: str | None) -> LLMSection:
    """The ``[llm]`` settings with other models for some roles (``assistant=``, ``judge=``, ...); a role
    given ``None`` keeps the project's model."""
    return settings.model_copy(
        update={"models": {**settings.models, **{r: m for r, m in roles.items() if m}}}
    )
