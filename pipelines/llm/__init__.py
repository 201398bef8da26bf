"""The LLM layer used by every generation stage, memory extraction and evaluation.

    from prefkit.pipelines.llm import LLMLayer, LLMRequest
    layer = LLMLayer(project.store, llm_config=project.config.llm, backend="openai", seed=0)
    responses = layer.run(requests, desc="personas")

See docs/llm.md for configuration, caching, resume, batch mode and the offline backend.
"""

from prefkit.pipelines.llm.config import LLMConfigError
from prefkit.pipelines.llm.costs import Estimate, ModelEstimate, PriceTable
from prefkit.pipelines.llm.keys import cache_key
from prefkit.pipelines.llm.layer import LLMLayer
from prefkit.pipelines.llm.offline import OfflineGeneratorMissing, register_offline
from prefkit.pipelines.llm.templates import TemplateNotFound, load_template, template_hash
from prefkit.pipelines.llm.types import Backend, LLMRequest, LLMResponse, Usage

__all__ = [
    "Backend",
    "Estimate",
    "LLMConfigError",
    "LLMLayer",
    "LLMRequest",
    "LLMResponse",
    "ModelEstimate",
    "OfflineGeneratorMissing",
    "PriceTable",
    "TemplateNotFound",
    "Usage",
    "cache_key",
    "load_template",
    "register_offline",
    "template_hash",
]
