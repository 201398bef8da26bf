"""The hooks of ``task_qc`` (declared in ``task_qc.toml`` beside this module): people check what an
LLM generated for AlpsBench tasks 2-4, as AlpsBench's human quality control did.

One task per built row (``prefkit tasks build-alpsbench``): the annotator sees the generated text (a
task 3/4 query, or a task 2 follow-up dialogue) beside the memory it is about and the gold answer, and
decides ``leakage`` (``none`` or ``leaks``) and ``answer`` (``correct`` or ``incorrect``). A built row
ships only when its final label is ``none`` + ``correct`` (:func:`passed`, the ``alpsbench_*`` hook).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from prefkit.curation.annotation.declared import own_kind

if TYPE_CHECKING:
    from prefkit.curation.store import AlpsTask, ProjectStore

KIND = "task_qc"


def item_ref(track: str, benchmark_id: str) -> str:
    return f"alps:{track}:{benchmark_id}"


def passed(values: dict[str, Any] | None) -> bool:
    """``hooks.release.alpsbench_*``: whether a final task_qc label lets the built row ship."""
    return (values or {}).get("leakage") == "none" and (values or {}).get("answer") == "correct"


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


def items(store: ProjectStore) -> Iterator[tuple[str, dict[str, Any]]]:
    """``hooks.items``: every built AlpsBench task row."""
    for row in store.alps_tasks.tasks():
        yield item_ref(row.track, row.benchmark_id), _payload(row)


#: The kind, as pyproject.toml's ``prefkit.task_kinds`` entry point names it.
TASK_KIND = own_kind(__file__)
