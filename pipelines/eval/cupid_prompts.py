"""Where the messages of the official CUPID steps come from: prefkit's own templates, or a CUPID
checkout's YAML prompt files (``--prompts DIR``), so a user who must reproduce the paper uses its text.

prefkit's templates (``prompts/cupid_official_*.jinja2``) are written for prefkit; they keep the answer
formats the steps are parsed by (headers, JSON shapes), not the original wording. A checkout's files are
read from ``DIR/prompts/evaluation/`` (``preference_inferrer``, ``preference_matcher``,
``preference_matcher_model``, ``response_generator``, ``response_judger``) and
``DIR/prompts/synthesis/preference_decomposer.yaml``, each ``{system_prompt, user_prompt}`` filled with
``str.format`` as CUPID's code fills them; the matcher's worked examples come from
``DIR/evaluation/modules/preference_matcher.py`` (its ``EXAMPLES`` literal) when that file is there.
The sha256 of every file used is recorded in the run. Nothing from a checkout is copied into prefkit.
"""

from __future__ import annotations

import ast
import hashlib
import json
import string
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from prefkit.pipelines.eval.prompting import SPLIT, template
from prefkit.pipelines.eval.release import EvalInputError

#: step -> (prefkit template, checkout file under prompts/, whether CUPID formats its system prompt)
STEPS: dict[str, tuple[str, str, bool]] = {
    "infer": ("cupid_official_infer", "evaluation/preference_inferrer.yaml", False),
    "decompose": ("cupid_official_decompose", "synthesis/preference_decomposer.yaml", True),
    "match": ("cupid_official_match", "evaluation/preference_matcher.yaml", True),
    "prefmatch": ("cupid_prefmatcher", "evaluation/preference_matcher_model.yaml", True),
    "generate": ("cupid_official_generate", "evaluation/response_generator.yaml", False),
    "judge": ("cupid_official_judge", "evaluation/response_judger.yaml", True),
}
EXAMPLES_FILE = "evaluation/modules/preference_matcher.py"
#: The ``{fields}`` each step fills (what :class:`~prefkit.pipelines.eval.cupid_protocol.Steps` passes):
#: a checkout's template may use any of its step's, and nothing else.
FIELDS: dict[str, frozenset[str]] = {
    "infer": frozenset({"interaction_log", "curr_request"}),
    "generate": frozenset({"interaction_log", "curr_request"}),
    "decompose": frozenset({"preferences"}),
    "match": frozenset({"checklist", "preference", "examples"}),
    "prefmatch": frozenset({"checklist", "preference"}),
    "judge": frozenset({"user_request", "ai_response", "preference", "checklist"}),
}
#: The largest prompt or examples file read (CUPID's are a few kilobytes).
MAX_PROMPT_BYTES = 1024 * 1024


def checkout_files(steps: tuple[str, ...] = tuple(STEPS)) -> tuple[str, ...]:
    """Every file :func:`checkout_prompts` reads for ``steps``, relative to the checkout (the property
    tests fuzz each one, so a file added here is covered without a new test)."""
    files = tuple(f"prompts/{STEPS[s][1]}" for s in steps)
    return files + ((EXAMPLES_FILE,) if "match" in steps else ())


LABEL_OF_CREDIT = {1: "Fully Covered", 0.5: "Partially Covered", 0: "Not Covered"}

#: prefkit's own worked examples for the matcher (written for prefkit): a preference and the credit
#: each checklist question gets from it (data/prefkit_match_examples.json).
PREFKIT_EXAMPLES: list[dict[str, Any]] = json.loads(
    resources.files(__package__).joinpath("data/prefkit_match_examples.json").read_text(encoding="utf-8")
)


def examples_text(examples: list[dict[str, Any]]) -> str:
    """Worked examples in the matcher's answer format: each preference, then the labelled checklist."""
    parts = []
    for ex in examples:
        results = [
            {"index": i + 1, "entry": entry, "label": LABEL_OF_CREDIT.get(credit, "Not Covered")}
            for i, (entry, credit) in enumerate(ex["checklist"].items())
        ]
        parts.append(
            f"#### Preference\n\n{ex['preference']}\n\n#### Output\n\n```json\n"
            + json.dumps({"results": results}, indent=2)
            + "\n```\n\n---\n\n"
        )
    return "".join(parts).strip()


def interaction_log(sessions: list[list[dict[str, str]]]) -> str:
    """The prior sessions as one text: numbered sessions, each message under its speaker's heading."""
    out = []
    for i, session in enumerate(sessions, start=1):
        lines = [f"### Session {i}\n"]
        for m in session:
            who = "User" if m["role"] == "user" else "AI Assistant"
            lines.append(f"#### {who}\n\n{m['content']}\n")
        out.append("\n".join(lines) + "\n---\n")
    return "\n".join(out).strip()


def numbered(checklist: list[str]) -> str:
    return "\n".join(f"{i + 1}. {entry}" for i, entry in enumerate(checklist))


def bulleted(checklist: list[str]) -> str:
    return "\n".join(f"- {entry}" for entry in checklist)


@dataclass(frozen=True)
class PromptSet:
    """The messages of each step, from prefkit's templates or from a CUPID checkout."""

    origin: str  # "prefkit" or the checkout's path
    files: dict[str, dict[str, str]] = field(default_factory=dict)  # step -> {system_prompt, user_prompt}
    examples: str = ""
    hashes: dict[str, str] = field(default_factory=dict)

    def messages(self, step: str, **values: str) -> tuple[tuple[str, str], ...]:
        if self.origin == "prefkit":
            system, _, user = template(STEPS[step][0]).render(**values).partition(SPLIT)
        else:
            prompt, format_system = self.files[step], STEPS[step][2]
            system = prompt.get("system_prompt") or ""
            system = system.format(**values) if format_system else system
            user = prompt["user_prompt"].format(**values)
        return tuple(m for m in (("system", system.strip()), ("user", user.strip())) if m[1])

    def template_hash(self, step: str) -> str:
        return self.hashes[step]


def prefkit_prompts(steps: tuple[str, ...]) -> PromptSet:
    hashes = {s: template(STEPS[s][0]).hash for s in steps}
    if "match" in steps:
        hashes["match_examples"] = hashlib.sha256(examples_text(PREFKIT_EXAMPLES).encode()).hexdigest()[:12]
    return PromptSet("prefkit", examples=examples_text(PREFKIT_EXAMPLES), hashes=hashes)


def _prompts_root(root: Path) -> Path:
    for candidate in (root / "prompts", root):
        if (candidate / "evaluation").is_dir():
            return candidate
    raise EvalInputError(f"--prompts {root}: no prompts/evaluation/ folder (a CUPID checkout's prompt files)")


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def checkout_prompts(root: Path, steps: tuple[str, ...]) -> PromptSet:
    """A CUPID checkout's prompt files for ``steps``; one error naming the first missing or bad file."""
    root = Path(root)
    base = _prompts_root(root)
    files: dict[str, dict[str, str]] = {}
    hashes: dict[str, str] = {}
    for step in steps:
        path = base / STEPS[step][1]
        if not path.is_file():
            raise EvalInputError(
                f"--prompts {root}: no {path.relative_to(root)} (needed for the {step} step)"
            )
        files[step] = _prompt_file(path, step)
        hashes[step] = f"{path.relative_to(root).as_posix()}@{_sha(path)[:12]}"
    examples = ""
    if "match" in steps:
        code = root / EXAMPLES_FILE
        if code.is_file():
            examples = examples_text(_examples_literal(code))
            hashes["match_examples"] = f"{EXAMPLES_FILE}@{_sha(code)[:12]}"
        else:
            examples = examples_text(PREFKIT_EXAMPLES)
            hashes["match_examples"] = "prefkit@" + hashlib.sha256(examples.encode()).hexdigest()[:12]
    return PromptSet(str(root.resolve()), files, examples, hashes)


def _examples_literal(path: Path) -> list[dict[str, Any]]:
    """The ``EXAMPLES = [...]`` literal of the checkout's matcher module (read, never executed)."""
    try:
        tree = ast.parse(_text(path))
    except SyntaxError as exc:
        raise EvalInputError(f"{path}:{exc.lineno}: not valid Python") from None
    except (ValueError, RecursionError, MemoryError):  # null bytes (before 3.12), nesting too deep
        raise EvalInputError(f"{path}: not valid Python") from None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "EXAMPLES" for t in node.targets):
            try:
                value = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
                break
            if isinstance(value, list) and value and all(_is_example(v) for v in value):
                return value
            break
    raise EvalInputError(
        f"{path}: no EXAMPLES list of {{preference: text, checklist: {{question: 1, 0.5 or 0}}}} literals"
    )


def _is_example(value: Any) -> bool:
    """One worked example as :func:`examples_text` writes it: a preference text and its checklist's
    credits (CUPID's 1 / 0.5 / 0)."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("preference"), str)
        and isinstance(value.get("checklist"), dict)
        and all(
            isinstance(q, str)
            and not isinstance(c, bool)
            and isinstance(c, int | float)
            and c in LABEL_OF_CREDIT
            for q, c in value["checklist"].items()
        )
    )


def _text(path: Path) -> str:
    """A checkout file's text: UTF-8, at most :data:`MAX_PROMPT_BYTES`; else one error naming it."""
    try:
        size = path.stat().st_size
        if size > MAX_PROMPT_BYTES:
            raise EvalInputError(f"{path}: {size} bytes, more than a prompt file's {MAX_PROMPT_BYTES}")
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise EvalInputError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise EvalInputError(f"{path}: cannot be read ({exc.strerror})") from None


def _prompt_file(path: Path, step: str) -> dict[str, str]:
    """A checkout's prompt file for ``step``, read, typed and trial-formatted: a mapping whose
    ``user_prompt`` (and ``system_prompt`` when given) is text, every template CUPID formats taking
    only plain ``{name}`` fields of the step's (:data:`FIELDS`). One error naming the file otherwise."""
    try:
        data = yaml.safe_load(_text(path))
    except yaml.YAMLError as exc:
        raise EvalInputError(f"{path}: not valid YAML ({str(exc).splitlines()[0]})") from None
    except RecursionError:
        raise EvalInputError(f"{path}: not valid YAML (nested too deeply)") from None
    if not isinstance(data, dict) or "user_prompt" not in data:
        raise EvalInputError(f"{path}: expected a mapping with user_prompt (and system_prompt)")
    for key in ("system_prompt", "user_prompt"):
        value = data.get(key)
        if value is not None and not isinstance(value, str):
            raise EvalInputError(f"{path}: {key} must be text, not {type(value).__name__}")
    prompt = {"system_prompt": data.get("system_prompt") or "", "user_prompt": data["user_prompt"] or ""}
    if not prompt["user_prompt"].strip():
        raise EvalInputError(f"{path}: user_prompt is empty")
    formatted = ("system_prompt", "user_prompt") if STEPS[step][2] else ("user_prompt",)
    for key in formatted:
        check_template(prompt[key], FIELDS[step], f"{path}: {key}")
    return prompt


def check_template(text: str, fields: frozenset[str], where: str) -> None:
    """``text`` as ``str.format`` reads it takes only plain ``{name}`` fields from ``fields``: no
    attribute or index (``{x.__class__}``, ``{x[0]}``), no conversion (``{x!r}``), no format spec (which
    may hold nested fields), no positional ``{}``; braces balanced (``{{`` and ``}}`` are literal).
    Then trial-formatted, so a template that passes is one the run can fill. :class:`EvalInputError`
    saying ``where`` and what is wrong otherwise."""
    allowed = ", ".join(sorted(fields))
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as exc:  # "Single '{' encountered", "expected '}' before end of string"
        raise EvalInputError(
            f"{where}: unbalanced braces ({exc}; write {{{{ and }}}} for literal braces)"
        ) from None
    for _, name, spec, conversion in parsed:
        if name is None:
            continue
        if not name.isidentifier():
            raise EvalInputError(f"{where}: field {{{name}}} is not a plain {{name}} (fields: {allowed})")
        if name not in fields:
            raise EvalInputError(f"{where}: unknown field {{{name}}} (fields: {allowed})")
        if conversion is not None or spec:
            shown = name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "")
            raise EvalInputError(
                f"{where}: field {{{shown}}} has a conversion or format spec; use plain {{{name}}}"
            )
    try:
        text.format(**dict.fromkeys(fields, "x"))
    except (ValueError, KeyError, IndexError, AttributeError) as exc:  # parse() passed; belt and braces
        raise EvalInputError(f"{where}: cannot be filled ({type(exc).__name__}: {exc})") from None


def load_prompts(root: Path | None, steps: tuple[str, ...]) -> PromptSet:
    return prefkit_prompts(steps) if root is None else checkout_prompts(root, steps)
