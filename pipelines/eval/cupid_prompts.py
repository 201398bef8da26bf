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
from dataclasses import dataclass, field
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
LABEL_OF_CREDIT = {1: "Fully Covered", 0.5: "Partially Covered", 0: "Not Covered"}

#: prefkit's own worked examples for the matcher (written for prefkit): a preference and the credit
#: each checklist question gets from it.
PREFKIT_EXAMPLES: list[dict[str, Any]] = [
    {
        "preference": "Budget summaries should lead with the total and flag every line item over the limit.",
        "checklist": {
            "Does the summary state the total first?": 1,
            "Are over-limit items flagged?": 1,
            "Does the summary compare spending with last year?": 0,
        },
    },
    {
        "preference": "Workout plans need rest days and should avoid any equipment.",
        "checklist": {
            "Does the plan include recovery time?": 1,
            "Does the plan use only bodyweight exercises?": 1,
            "Is the plan progressive week over week?": 0,
            "Is the plan safe for beginners?": 0.5,
        },
    },
    {
        "preference": "Travel suggestions should favour quiet places reachable by train.",
        "checklist": {
            "Are the suggested places calm?": 1,
            "Do the suggestions include transport details?": 0.5,
            "Are the suggestions cheap?": 0,
        },
    },
]


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
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            raise EvalInputError(f"{path}: not valid YAML ({str(exc).splitlines()[0]})") from None
        if not isinstance(data, dict) or not isinstance(data.get("user_prompt"), str):
            raise EvalInputError(f"{path}: expected a mapping with user_prompt (and system_prompt)")
        files[step] = {"system_prompt": data.get("system_prompt") or "", "user_prompt": data["user_prompt"]}
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
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except SyntaxError as exc:
        raise EvalInputError(f"{path}:{exc.lineno}: not valid Python") from None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "EXAMPLES" for t in node.targets):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                break
            if isinstance(value, list) and all(isinstance(v, dict) and "checklist" in v for v in value):
                return value
    raise EvalInputError(f"{path}: no EXAMPLES list of {{preference, checklist}} literals")


def load_prompts(root: Path | None, steps: tuple[str, ...]) -> PromptSet:
    return prefkit_prompts(steps) if root is None else checkout_prompts(root, steps)
