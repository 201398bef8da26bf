"""Judge-assisted labelling: which items show their suggestion, and what a label records about it.

An item with a suggestion (``prefkit suggest``) is, for each annotator, in the ``control`` arm (a
stable share, ``[annotation] assist_control_share``, drawn by a hash of annotator, kind and item, shown
*without* it) or the ``assisted`` arm (shown with it, pre-filled). The label event records the arm and
the suggestion's id, so ``prefkit agreement --assist`` can compare the arms (docs/assist.md, *The
arms*). A suggestion is never a label or a vote: this module reads ``store.suggestions`` and hands the
app what to draw; it never writes a label.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from prefkit.curation.project import Project
    from prefkit.curation.store import Suggestion
    from prefkit.schemas.curation import AnnotationTask

Arm = Literal["assisted", "control"]
ARMS: tuple[Arm, ...] = ("assisted", "control")
#: The annotator of the draw for an item shown to everyone alike (Label Studio: a task's predictions
#: are the same for every annotator who opens it, so its arm is drawn per item).
EVERYONE = ""


def draw(annotator: str, kind: str, item_ref: str) -> float:
    """A stable number in [0, 1) for (annotator, kind, item): the arm's random draw."""
    digest = hashlib.sha256(f"{annotator}\x1f{kind}\x1f{item_ref}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def arm_of(annotator: str, kind: str, item_ref: str, control_share: float) -> Arm:
    """``control`` for a ``control_share`` of the items (stable per annotator, kind and item)."""
    return "control" if draw(annotator, kind, item_ref) < control_share else "assisted"


@dataclass(frozen=True)
class Exposure:
    """What an annotator is shown of an item's suggestion: its arm, the suggestion's id, and — only
    in the assisted arm — the suggested values and detail (a control exposure carries none, so
    nothing downstream can draw them)."""

    arm: Arm
    suggestion_id: str
    model: str
    values: dict[str, Any] | None = None
    detail: dict[str, Any] | None = None
    offline: bool = False

    @property
    def shown(self) -> bool:
        return self.arm == "assisted"


def exposure(
    suggestion: Suggestion | None, annotator: str, task: AnnotationTask, control_share: float
) -> Exposure | None:
    """The exposure of ``annotator`` to ``suggestion`` on ``task`` (None: no suggestion, no arm)."""
    if suggestion is None:
        return None
    arm = arm_of(annotator, task.kind, task.item_ref, control_share)
    if arm == "control":
        return Exposure("control", suggestion.suggestion_id, suggestion.model, offline=suggestion.offline)
    return Exposure(
        "assisted",
        suggestion.suggestion_id,
        suggestion.model,
        suggestion.values,
        suggestion.detail,
        suggestion.offline,
    )


def exposure_for(project: Project, annotator: str, task: AnnotationTask) -> Exposure | None:
    """The app's call per item: the newest suggestion for ``task`` and the annotator's arm."""
    share = project.config.annotation.assist_control_share
    return exposure(project.store.suggestions.for_task(task.task_id), annotator, task, share)
