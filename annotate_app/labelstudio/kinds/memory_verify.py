"""``memory_verify`` in Label Studio.

Up to ``MAX_CANDIDATES`` candidates per task, as slots ``c0..c59`` (Label Studio has no data-driven
repetition); a task with more is not pushed (label it in the prefkit app). An edit corrects the memory
statement; its taxonomy label, type and time scope are kept from the candidate ("unknown" time scope
when it has none). Memories the models missed cannot be added in Label Studio.
"""

from __future__ import annotations

from typing import Any

from prefkit.annotate_app.labelstudio.config import (
    LSConfig,
    by_control,
    choice_result,
    comment_xml,
    dialogue_data,
    dialogue_xml,
    one_choice,
    shown_when,
    tag,
    text,
    text_result,
    textarea_xml,
)
from prefkit.curation.annotation.kinds.memory_verify import DECISIONS, REJECT_REASONS
from prefkit.curation.annotation.task_kinds import LabelError

MAX_CANDIDATES = 60


class MemoryConfig(LSConfig):
    controls = {"comment"} | {f"c{i}{s}" for i in range(MAX_CANDIDATES) for s in ("", "_reason", "_edit")}

    def xml(self):
        slots = "".join(
            tag("Header", value=f"$c{i}_title", size="6")
            + tag("Header", value=f"$c{i}_memory", size="5")
            + tag(
                "Choices",
                name=f"c{i}",
                toName="dialogue",
                value=f"$c{i}_options",
                choice="single-radio",
                showInline="true",
            )
            + shown_when(
                tag(
                    "Choices",
                    name=f"c{i}_reason",
                    value=f"$c{i}_reasons",
                    toName="dialogue",
                    choice="single-radio",
                    showInline="true",
                ),
                f"c{i}",
                "reject",
            )
            + shown_when(textarea_xml(f"c{i}_edit", "dialogue", "Corrected memory"), f"c{i}", "edit")
            for i in range(MAX_CANDIDATES)
        )
        body = (
            dialogue_xml()
            + tag("Header", value="Candidate memories: accept, edit or reject each one", size="4")
            + slots
            + comment_xml("dialogue")
        )
        return tag("View", body)

    def fits(self, task):
        n = len(task.payload["candidates"])
        return None if n <= MAX_CANDIDATES else f"{n} candidates (the config has {MAX_CANDIDATES} slots)"

    def data(self, task):
        cands = task.payload["candidates"]
        out: dict[str, Any] = {"dialogue": dialogue_data(task)}
        for i in range(MAX_CANDIDATES):
            c = cands[i] if i < len(cands) else None
            memory = c["memory"] if c and isinstance(c["memory"], dict) else {}
            out[f"c{i}_title"] = self._title(i, c, memory) if c else ""
            out[f"c{i}_memory"] = str(memory.get("value", "")) if c else ""
            out[f"c{i}_options"] = [{"value": d} for d in DECISIONS] if c else []
            # Loaded from the data like the decisions, so an empty slot renders no controls at all.
            out[f"c{i}_reasons"] = [{"value": r} for r in REJECT_REASONS] if c else []
        return out

    @staticmethod
    def _title(i: int, c: dict[str, Any], memory: dict[str, Any]) -> str:
        about = ", ".join(str(memory[k]) for k in ("label", "type", "time_scope") if memory.get(k))
        problems = f" — problems: {'; '.join(c['problems'])}" if c.get("problems") else ""
        return f"Candidate {i + 1} ({c['model']}) {about}{problems}"

    def raw_values(self, results, task):
        grouped = by_control(results, self.controls)
        cands = task.payload["candidates"]
        beyond = [n for n in grouped if n != "comment" and int(n[1:].split("_")[0]) >= len(cands)]
        if beyond:
            raise LabelError(f"{beyond[0]}: the task has only {len(cands)} candidates")
        decisions = []
        for i, c in enumerate(cands):
            decision = one_choice(grouped, f"c{i}", set(DECISIONS))
            if decision is not None:
                decisions.append(self._decision(grouped, i, c, decision))
        return {"decisions": decisions, "comment": text(grouped, "comment")}

    @staticmethod
    def _decision(grouped, i: int, c: dict[str, Any], decision: str) -> dict[str, Any]:
        out: dict[str, Any] = {"key": c["key"], "decision": decision}
        if decision == "reject":
            out["reason"] = one_choice(grouped, f"c{i}_reason", set(REJECT_REASONS))
        if decision == "edit":
            memory = c["memory"] if isinstance(c["memory"], dict) else {}
            out["edited"] = {
                "value": text(grouped, f"c{i}_edit") or "",
                "label": memory.get("label"),
                "type": memory.get("type"),
                "time_scope": memory.get("time_scope") or "unknown",
            }
        return out

    def results(self, values, task):
        index = {c["key"]: i for i, c in enumerate(task.payload["candidates"])}
        out = []
        for d in values["decisions"]:
            i = index[d["key"]]
            out.append(choice_result(f"c{i}", "dialogue", d["decision"]))
            if d["decision"] == "reject":
                out.append(choice_result(f"c{i}_reason", "dialogue", d["reason"]))
            if d["decision"] == "edit":
                out.append(text_result(f"c{i}_edit", "dialogue", d["edited"]["value"]))
        if values.get("comment"):
            out.append(text_result("comment", "dialogue", values["comment"]))
        return out


CONFIG = MemoryConfig()
