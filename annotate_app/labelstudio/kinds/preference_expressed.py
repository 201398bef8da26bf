"""``preference_expressed`` in Label Studio.

Label Studio has no data-driven repetition, so the checklist becomes up to ``MAX_ITEMS`` (4) slots
``item0..item3`` whose choices are loaded from the task data (an absent item has no choices, so
nothing to click); a task with more items is not pushed (label it in the prefkit app). Evidence is
marked by labelling user turns in the dialogue with "item N".
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
    tag,
    text,
    text_result,
)
from prefkit.curation.annotation.task_kinds import LabelError
from prefkit.schemas.curation import AnnotationTask

MAX_ITEMS = 4


class ExpressedConfig(LSConfig):
    controls = {"evidence", "comment", *(f"item{i}" for i in range(MAX_ITEMS))}

    @staticmethod
    def hotkeys(i: int) -> tuple[str, str]:
        return str(2 * i + 1), str(2 * i + 2)

    def bind(self, kind):
        self.kind = kind
        # "expressed" first, the way the guidelines ask the question
        self.choices = tuple(sorted(kind.field("expressed").choices or (), key=lambda c: c != "expressed"))

    def xml(self) -> str:
        labels = "".join(tag("Label", value=f"item {i + 1}", hotkey="qwer"[i]) for i in range(MAX_ITEMS))
        slots = "".join(
            tag("Header", value=f"$q{i}", size="5")
            + tag(
                "Choices",
                name=f"item{i}",
                toName="dialogue",
                value=f"$item{i}_options",
                choice="single-radio",
                showInline="true",
            )
            for i in range(MAX_ITEMS)
        )
        body = (
            tag("Header", value="Preference in force: $preference", size="4")
            + tag("Header", value="Context: $context_factor", size="6")
            + dialogue_xml()
            + tag(
                "Header",
                value="Evidence (optional): select a user turn, then label it with its item",
                size="6",
            )
            + tag("ParagraphLabels", labels, name="evidence", toName="dialogue")
            + tag("Header", value="Does the user express each checklist item?", size="4")
            + slots
            + comment_xml("dialogue")
        )
        return tag("View", body)

    def data(self, task):
        checklist = task.payload["checklist"]
        out: dict[str, Any] = {
            "dialogue": dialogue_data(task),
            "preference": task.payload["preference"],
            "context_factor": task.payload["context_factor"],
        }
        for i in range(MAX_ITEMS):
            keys = self.hotkeys(i)
            present = i < len(checklist)
            out[f"q{i}"] = f"{i + 1}. {checklist[i]} (keys {keys[0]} / {keys[1]})" if present else ""
            out[f"item{i}_options"] = (
                [{"value": c, "hotkey": k} for c, k in zip(self.choices, keys, strict=True)]
                if present
                else []
            )
        return out

    def fits(self, task):
        n = len(task.payload["checklist"])
        return None if n <= MAX_ITEMS else f"{n} checklist items (the config has {MAX_ITEMS} slots)"

    def raw_values(self, results, task):
        grouped = by_control(results, self.controls)
        evidence = self._evidence(grouped.get("evidence", []), task)
        items = []
        for i in range(len(task.payload["checklist"])):
            choice = one_choice(grouped, f"item{i}", set(self.choices))
            if choice is not None:
                items.append({"item": i, "expressed": choice == "expressed", "evidence": evidence.get(i, [])})
        extra = [n for n in grouped if n.startswith("item") and int(n[4:]) >= len(task.payload["checklist"])]
        if extra:
            raise LabelError(
                f"{extra[0]}: the task has only {len(task.payload['checklist'])} checklist items"
            )
        return {"items": items, "comment": text(grouped, "comment")}

    @staticmethod
    def _evidence(results: list[dict[str, Any]], task: AnnotationTask) -> dict[int, list[int]]:
        turns = task.payload["turns"]
        out: dict[int, set[int]] = {}
        for r in results:
            v = r.get("value") or {}
            try:
                start, end = int(v["start"]), int(v["end"])
                labels = [int(str(lab).removeprefix("item ")) - 1 for lab in v["paragraphlabels"]]
            except (KeyError, TypeError, ValueError) as exc:
                raise LabelError(f"evidence: malformed paragraph label {v!r}") from exc
            if not 0 <= start <= end < len(turns):
                raise LabelError(f"evidence: paragraphs {start}..{end} are outside the dialogue")
            for item in labels:
                out.setdefault(item, set()).update(turns[p]["index"] for p in range(start, end + 1))
        return {k: sorted(v) for k, v in out.items()}

    def results(self, values, task):
        out = []
        position = {t["index"]: p for p, t in enumerate(task.payload["turns"])}
        for it in values["items"]:
            out.append(
                choice_result(
                    f"item{it['item']}", "dialogue", "expressed" if it["expressed"] else "not_expressed"
                )
            )
            for turn in it.get("evidence", []):
                p = position[turn]
                content = task.payload["turns"][p]["content"]
                out.append(
                    {
                        "from_name": "evidence",
                        "to_name": "dialogue",
                        "type": "paragraphlabels",
                        "value": {
                            "start": p,
                            "end": p,
                            "startOffset": 0,
                            "endOffset": len(content),
                            "text": content,
                            "paragraphlabels": [f"item {it['item'] + 1}"],
                        },
                    }
                )
        if values.get("comment"):
            out.append(text_result("comment", "dialogue", values["comment"]))
        return out


CONFIG = ExpressedConfig()
