"""Has a model seen a release? ``prefkit eval contamination``: (a) the model is asked to complete the
release's canary line (does the GUID come back?); (b) for a seeded sample of the release's public test
rows it is given the first half of a text and asked to go on, and what comes back is compared with the
held-out half: the longest common substring (characters) and the exact prefix (words). Only the
release's public files are read, and only as regular files: a symlink (out of the release) or a
special file among them is refused, as ``release verify`` refuses it. Every call goes through the LLM
layer (cached, resumed, priced)."""

from __future__ import annotations

import random
import stat
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any

from prefkit.pipelines.eval.release import EvalInputError, jsonl_lines
from prefkit.pipelines.llm.offline import register_offline
from prefkit.pipelines.llm.templates import template_hash
from prefkit.pipelines.llm.types import LLMRequest
from prefkit.schemas.curation import CANARY_PREFIX
from prefkit.schemas.reading import read_json

PROTOCOL = "prefkit-contamination-v1"
SYSTEM = "You continue text exactly as it appears in its source. Write only the continuation."
MIN_WORDS = 16  # a text shorter than this is not sampled: its half is too short to be telling
SHOWS = (
    "A GUID that comes back shows the model (or a tool it used) saw a document holding this project's canary: "
    "a release of it, or a copy. Long verbatim continuations of held-out halves show memorised rows. Neither "
    "negative shows the model never saw the data: the canary line may have been stripped, rare strings are not "
    "always memorised, a model may be tuned not to repeat them, and paraphrased or translated copies are not "
    "looked for. The sample measures these rows only; its size bounds what it can say."
)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    parts = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return [s for v in parts for s in _strings(v)]


def _regular(release: Path, path: Path) -> Path:
    """``path``, refused in one line when it or a folder between it and ``release`` is a symlink or
    is not a regular file or folder."""
    rel = path.relative_to(release)
    for part in (path, *(release / p for p in rel.parents if p != Path("."))):
        if part.is_symlink() or not (part.is_dir() if part != path else stat.S_ISREG(part.stat().st_mode)):
            raise EvalInputError(f"{part}: a symlink or special file (a release holds regular files only)")
    return path


def canary(release: Path) -> str | None:
    """The canary GUID ``manifest.json`` names (``None`` for a release cut before canaries)."""
    path = release / "manifest.json"
    if not path.exists() and not path.is_symlink():
        raise EvalInputError(f"{release}: not a release directory (no manifest.json)")
    manifest = read_json(_regular(release, path))
    if not isinstance(manifest, dict):
        raise EvalInputError(f"{path}: expected a JSON object, got {type(manifest).__name__}")
    guid = manifest.get("canary")
    if guid is not None and not isinstance(guid, str):
        raise EvalInputError(f"{path}: canary: expected a GUID string, got {type(guid).__name__}")
    return guid or None


def sample(release: Path, n: int, seed: int) -> list[tuple[str, str]]:
    """``(config:line, text)`` for ``n`` rows of the public test splits (``data/<config>/test.jsonl``,
    drawn with ``seed``): each row's longest text of ``MIN_WORDS`` words or more that no earlier row
    gave (rows share texts: one persona's sessions)."""
    canary(release)  # a release directory, with a manifest it can be read by
    found: dict[str, str] = {}
    for path in sorted(release.glob("data/*/test.jsonl")):
        for line, row in jsonl_lines(_regular(release, path)):
            texts = [t for t in sorted(_strings(row), key=len, reverse=True) if len(t.split()) >= MIN_WORDS]
            if text := next((t for t in texts if t not in found), None):
                found[text] = f"{path.parent.name}:{line}"
    pairs = [(item, text) for text, item in found.items()]
    return random.Random(seed).sample(pairs, min(n, len(pairs)))


def _request(item: str, prompt: str) -> LLMRequest:
    messages = (("system", SYSTEM), ("user", prompt))
    return LLMRequest("contamination", item, "assistant", messages, None, 0.0, 256, template_hash(SYSTEM))


def requests(release: Path, n: int, seed: int) -> list[LLMRequest]:
    """The canary request, then one per sampled text (its first half)."""
    out = [_request("canary", CANARY_PREFIX)]
    for item, text in sample(release, n, seed):
        words = text.split()
        out.append(_request(item, " ".join(words[: len(words) // 2])))
    return out


def _scores(held: str, said: str) -> tuple[float, int]:
    match = SequenceMatcher(None, held, said, autojunk=False).find_longest_match(0, len(held), 0, len(said))
    prefix = 0
    for want, got in zip(held.split(), said.split(), strict=False):
        if want != got:
            break
        prefix += 1
    return match.size / len(held), prefix


def check(layer, release: Path, n: int = 50, seed: int = 0) -> dict[str, Any]:
    """The report: the canary's answer, each sampled item's overlap, the means, the protocol."""
    guid = canary(release)
    asked = requests(release, n, seed)
    answers = layer.run(asked, desc="contamination")
    items = []
    for (item, text), answer in zip(sample(release, n, seed), answers[1:], strict=True):
        words = text.split()
        lcs, prefix = _scores(" ".join(words[len(words) // 2 :]), " ".join((answer.text or "").split()))
        items.append({"item": item, "ok": answer.ok, "lcs_ratio": round(lcs, 4), "prefix_words": prefix})
    done = [i for i in items if i["ok"]]
    return {
        "protocol": PROTOCOL,
        "model": layer.settings.model_for("assistant"),
        "offline": layer.backend.offline,
        "canary": guid,
        "canary_returned": None if not guid or not answers[0].ok else guid in (answers[0].text or ""),
        "n_items": len(items),
        "n_failed": len(items) - len(done),
        "mean_lcs_ratio": round(sum(i["lcs_ratio"] for i in done) / len(done), 4) if done else None,
        "mean_prefix_words": round(sum(i["prefix_words"] for i in done) / len(done), 2) if done else None,
        "items": items,
        "what_it_shows": SHOWS,
    }


@register_offline("contamination")
def _offline(request: LLMRequest, rng: random.Random) -> str:
    return "(offline backend: no model was asked)"
