"""The ``task_qc`` task kind: people check what an LLM generated for AlpsBench tasks 2-4.

One task per built row (``prefkit tasks build-alpsbench``): the annotator sees the generated text (a
task 3/4 query, or a task 2 follow-up dialogue) beside the memory it is about and the gold answer, and
decides two things, as AlpsBench's human quality control did:

- ``leakage``: ``none`` or ``leaks`` — does the generated text give the memory away?
- ``answer``: ``correct`` or ``incorrect`` — is the gold answer right for this input?

A built row ships only when its final label is ``none`` + ``correct``. Everything this kind needs is in
this module; pyproject.toml declares it (an entry point of ``prefkit.task_kinds``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from prefkit.curation.annotation.task_kinds import FieldSpec, TaskKind
from prefkit.curation.store import AlpsTask
from prefkit.schemas.common import Contract
from pydantic import Field

if TYPE_CHECKING:
    from prefkit.curation.store import ProjectStore

KIND = "task_qc"


class TaskQcLabel(Contract):
    leakage: Literal["none", "leaks"] = Field(description="Does the generated text give the memory away?")
    answer: Literal["correct", "incorrect"] = Field(description="Is the gold answer right for this input?")
    comment: str | None = Field(default=None, description="Optional note (what leaks, what is wrong).")


def item_ref(track: str, benchmark_id: str) -> str:
    return f"alps:{track}:{benchmark_id}"


def passed(values: dict[str, Any] | None) -> bool:
    """Whether a final task_qc label lets the row ship."""
    return (
        bool(values)
        and values is not None
        and values.get("leakage") == "none"
        and values.get("answer") == "correct"
    )


def _payload(row: AlpsTask) -> dict[str, Any]:
    inp, gold = row.input["input"], row.gold["gold"]
    track = row.track
    if track == "task2":
        generated = "\n".join(f"{t['role']}: {t['text']}" for t in inp["new_dialogue"])
        memory: dict[str, Any] = next(
            (m for m in inp["memory"] if m["memory_id"] == gold["selected_memory_id"]), {}
        )
        answer = "\n".join(f"{m['memory_id']}: {m['value']}" for m in gold["answer"])
        question = "The follow-up conversation should update the memory below and add one new memory."
    else:
        generated = inp["query"]
        memory = gold["selected_memory"]
        answer = f"{gold['selected_memory_id']}: {memory.get('value', '')}"
        question = "A good answer to this message needs the memory below, which the message must not state."
    return {
        "track": track,
        "benchmark_id": row.benchmark_id,
        "question": question,
        "generated": generated,
        "memory": f"{memory.get('label', '')}: {memory.get('value', '')}",
        "gold_answer": answer,
        "checks": row.checks or {},
    }


class TaskQc(TaskKind):
    name = KIND
    title = "Generated task check"
    app_form = "prefkit.annotate_app.forms.task_qc"
    labelstudio_config = "prefkit.annotate_app.labelstudio.kinds.task_qc:CONFIG"
    suggestions = "prefkit.pipelines.suggestions.kinds:TASK_QC"
    menu_order = 40
    flag_reasons = (
        "generated text empty or truncated",
        "memory or gold answer missing",
        "wrong language",
        "other",
    )
    label_model = TaskQcLabel
    fields = (
        FieldSpec("leakage", "nominal", ("leaks", "none")),
        FieldSpec("answer", "nominal", ("incorrect", "correct")),
    )

    def build_tasks(self, store: ProjectStore, overlap, batch):
        return [
            self.make_task(item_ref(r.track, r.benchmark_id), _payload(r), overlap, batch)
            for r in store.alps_tasks.tasks()
        ]

    def units(self, values):
        return {("", f.name): values[f.name] for f in self.fields if f.name in values}

    def assemble(self, units, labels):
        """The final values from the decided units (consensus per field)."""
        return {f.name: units[("", f.name)] for f in self.fields if ("", f.name) in units}


#: The kind, as pyproject.toml's ``prefkit.task_kinds`` entry point names it.
TASK_KIND = TaskQc()
