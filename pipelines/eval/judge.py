"""Is the judge trusted? Its agreement with people on the human matching set.

An LLM judge is recorded as an annotator named ``judge.<model>`` (an inactive account that nobody can
sign in as), its labels are events with ``source="judge"`` written by ``prefkit tasks pairs from-eval``.
Once people label the same ``preference_match`` pairs, the judge-vs-human Krippendorff α (the judge against the human consensus, with a bootstrap interval)
says whether to trust it: below ``[release] judge_alpha_min`` (default 0.667) every evaluation report
that used the judge says "not validated". This module only reads the store.
"""

from __future__ import annotations

import re
import secrets
from typing import TYPE_CHECKING, Any

from prefkit.curation.annotation.kinds.preference_match import KIND
from prefkit.curation.quality.agreement import agreement_rows
from prefkit.schemas.config import TENTATIVE_ALPHA_MIN

if TYPE_CHECKING:
    from prefkit.curation.store import ProjectStore

JUDGE_ALPHA_MIN = TENTATIVE_ALPHA_MIN  # the default of [release] judge_alpha_min


def judge_annotator(model: str) -> str:
    """The annotator name of a judge model (a valid user name: ``judge.`` + the model, ``/`` -> ``-``)."""
    return "judge." + re.sub(r"[^A-Za-z0-9._-]", "-", model)


def ensure_judge_user(store: ProjectStore, model: str) -> str:
    """The judge's user record: an inactive account (nobody can sign in as it; no queue is assigned to
    it) so its label events name a real annotator."""
    name = judge_annotator(model)
    if store.accounts.user(name) is None:
        store.accounts.add_user(name, "annotator", secrets.token_urlsafe(32), judge=True)
        store.accounts.set_user_active(name, False)
    return name


def judge_validation(
    store: ProjectStore, model: str, alpha_min: float = JUDGE_ALPHA_MIN, n_boot: int = 500
) -> dict[str, Any]:
    """Judge-vs-human and human-vs-human α on the matching set, and whether the judge is validated."""
    name = judge_annotator(model)
    rows = agreement_rows(store, kind=KIND, judges=(name,), n_boot=n_boot, alpha_min=alpha_min)
    human = next((r for r in rows if r["comparison"] == "human-vs-human"), None)
    mine = next((r for r in rows if r["comparison"] == "judge-vs-human" and r["judge"] == name), None)
    alpha = mine["alpha"] if mine else None
    validated = alpha is not None and alpha >= alpha_min
    if mine is None or not mine["n_units"]:
        reason = f"no {KIND} pairs labelled by both {name} and people (see `prefkit tasks pairs from-eval`)"
    elif alpha is None:
        reason = "judge-vs-human α is undefined (no variation in the labels)"
    else:
        reason = f"judge-vs-human α {alpha:.3f} {'≥' if validated else '<'} judge_alpha_min {alpha_min:.3f}"
    return {
        "judge": name,
        "validated": validated,
        "status": "validated" if validated else "not validated",
        "reason": reason,
        "alpha_min": alpha_min,
        "judge_vs_human": _pick(mine),
        "human_vs_human": _pick(human),
    }


def _pick(row: dict[str, Any] | None) -> dict[str, Any] | None:
    if row is None:
        return None
    return {k: row.get(k) for k in ("alpha", "ci_low", "ci_high", "n_units", "n_labels", "n_raters")}
