"""Verification: what the annotators' final labels say about each CUPID session and instance.

A session is *verified* when the final label (adjudication, else majority) of its latest
``preference_expressed`` task says every checklist item is expressed; *failed* when an item is not
expressed or the session is flagged (and no maintainer decided otherwise); *needs_reverification*
when a turn was rewritten after it was labelled and the new round has no final label yet;
*unverified* otherwise (no task, too few labels, a tie). Rewrites are part of the session: each
rewrite starts a new verification round (``session:<id>@r<n>``), and only the latest round counts.

An instance is verified when every session it depends on (``instance_sessions.relevant``) is.
Everything here is derived from the logs at read time and writes nothing (the next round's task after
a rewrite is the kind's: :func:`prefkit.curation.annotation.kinds.preference_expressed.ensure_reverification_task`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from prefkit.curation.annotation.kinds.memory_verify import KIND as MEMORY_KIND
from prefkit.curation.annotation.kinds.preference_expressed import KIND, not_expressed, session_tasks
from prefkit.curation.quality.consensus import (
    FinalLabel,
    effective_adjudications,
    final_labels,
    live_flags,
    live_labels,
)
from prefkit.curation.quality.evidence import Normalized, check_memory, check_quote
from prefkit.schemas.alpsbench import MemoryItem

if TYPE_CHECKING:
    from prefkit.curation.store import InstanceLink, ProjectStore

STATUSES = ("verified", "failed", "needs_reverification", "unverified")


@dataclass
class SessionVerification:
    """The verification state of one session and why."""

    session_id: str
    status: str
    reason: str
    task_id: str | None = None
    round: int = 0
    revisions: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _decide(fl: FinalLabel, flags: list, adjudicated: bool) -> tuple[str, str] | None:
    """``(status, reason)`` from one task's final label and live flags; ``None`` when undecided."""
    if flags and not adjudicated:
        ev = flags[0]
        return "failed", f"flagged by {ev.annotator}: {ev.comment or '(no comment)'}"
    if fl.values is None:
        return None
    missing = not_expressed(fl.values)
    if missing:
        return "failed", f"checklist item(s) {missing} not expressed ({fl.decided_by})"
    return "verified", f"every checklist item expressed ({fl.decided_by}, {fl.n_labels} label(s))"


def session_statuses(
    store: ProjectStore, session_ids: list[str] | None = None
) -> dict[str, SessionVerification]:
    """The verification state of every session that has a checklist to verify (or of ``session_ids``)."""
    if session_ids is None:
        session_ids = [s.session_id for s in store.content.sessions() if s.questions]
    rounds = session_tasks(store)
    finals = final_labels(store, KIND)
    labels = live_labels(store, KIND)
    adjs = effective_adjudications(store)
    flags: dict[str, list] = {}
    for ev in live_flags(store, KIND):
        flags.setdefault(ev.task_id, []).append(ev)
    revisions = store.content.revision_counts()
    out = {}
    for sid in session_ids:
        n_rev = revisions.get(sid, 0)
        mine = rounds.get(sid, [])
        if not mine:
            out[sid] = SessionVerification(sid, "unverified", "no preference_expressed task", revisions=n_rev)
            continue
        rnd, task = mine[-1]
        decided = _decide(finals[task.task_id], flags.get(task.task_id, []), task.task_id in adjs)
        labelled_before = any(labels.get(t.task_id) or flags.get(t.task_id) for _r, t in mine[:-1])
        if decided and n_rev > rnd:
            status, reason = "needs_reverification", f"turn rewritten after round {rnd} was labelled"
        elif decided:
            status, reason = decided
        elif labelled_before or (n_rev > rnd and labels.get(task.task_id)):
            status, reason = "needs_reverification", f"rewritten; round {max(rnd, n_rev)} not decided yet"
        else:
            fl = finals[task.task_id]
            status = "unverified"
            reason = "a tie waits for adjudication" if fl.tied else f"{fl.n_labels} label(s), no final label"
        out[sid] = SessionVerification(sid, status, reason, task.task_id, rnd, n_rev)
    return out


def instance_verification(
    links: list[InstanceLink], statuses: dict[str, SessionVerification]
) -> tuple[bool, str]:
    """Whether an instance is verified (every relevant session is) and, if not, the reason - one of a
    few fixed phrases, so a release can count its dropped instances per reason."""
    if not links:
        return False, "no session links (made before prefkit tracked them)"
    relevant = [link for link in links if link.relevant]
    if not relevant:
        return False, "no session it depends on"
    found = {statuses[x.session_id].status if x.session_id in statuses else "unverified" for x in relevant}
    for status in ("failed", "needs_reverification", "unverified"):
        if status in found:
            return False, f"a session it depends on is {status.replace('_', ' ')}"
    return True, "every session it depends on is verified"


def status_counts(statuses: dict[str, SessionVerification]) -> dict[str, int]:
    counts = dict.fromkeys(STATUSES, 0)
    for st in statuses.values():
        counts[st.status] += 1
    return counts


def silent_sessions(store: ProjectStore) -> list[str]:
    """Sessions that should show a preference but hold no user feedback at all (the opening request,
    a reply, the end): a session with a checklist and an assistant reply but one user message."""
    out = []
    for s in store.content.sessions():
        roles = [t.role for t in s.turns]
        if s.questions and "assistant" in roles and roles.count("user") < 2:
            out.append(s.session_id)
    return out


# -- AlpsBench: verified gold memories ------------------------------------------------------------------


def _quote_index(text: str | None, index: Any, turns) -> Any:
    """The cited utterance index, or (none cited) the turn where the quote is found, if any."""
    if index is not None or not text:
        return index
    return check_quote(text, None, turns).found_in


def _gold_memory(
    n: int, session_id: str, fields: dict[str, Any], base: dict[str, Any], turns
) -> dict[str, Any]:
    """One verified gold memory in AlpsBench's MemoryItem shape: ``fields`` (an edit or an added
    memory) over ``base`` (the candidate as the model wrote it)."""
    evidence: dict[str, Any] = base["evidence"] if isinstance(base.get("evidence"), dict) else {}
    text = fields.get("evidence_text") or evidence.get("text") or base.get("evidence_text")
    index = (
        fields["evidence_turn"]
        if fields.get("evidence_turn") is not None
        else evidence.get("utterance_index")
    )
    conf = fields.get("confidence", base.get("confidence"))
    item = {
        "memory_id": f"v{n}",
        "type": fields.get("type", base.get("type")),
        "label": fields.get("label", base.get("label")),
        "value": fields.get("value", base.get("value")),
        "evidence": {
            "session_id": session_id,
            "utterance_index": _quote_index(text, index, turns),
            "text": text,
        },
        "confidence": conf
        if isinstance(conf, int | float) and not isinstance(conf, bool) and 0 <= conf <= 1
        else None,
        "time_scope": fields.get("time_scope", base.get("time_scope")) or "unknown",
    }
    return MemoryItem.model_validate(item).model_dump(mode="json", exclude_none=True)


#: While :func:`remembering_gold` is open, each store's verified gold is computed once (a release
#: reads it for its configs and for two gates; the labels cannot change under a cut).
_MEMO: ContextVar[dict[int, tuple[Any, dict[str, dict[str, Any]]]] | None] = ContextVar(
    "verified_gold", default=None
)


@contextmanager
def remembering_gold() -> Iterator[None]:
    """Compute :func:`verified_gold` once per store inside this block (nested blocks share it)."""
    token = _MEMO.set({}) if _MEMO.get() is None else None
    try:
        yield
    finally:
        if token is not None:
            _MEMO.reset(token)


def verified_gold(store: ProjectStore) -> dict[str, dict[str, Any]]:
    memo = _MEMO.get()
    if memo is not None and id(store) in memo and memo[id(store)][0] is store:
        return memo[id(store)][1]
    out = _verified_gold(store)
    if memo is not None:
        memo[id(store)] = (store, out)
    return out


def _verified_gold(store: ProjectStore) -> dict[str, dict[str, Any]]:
    """Per dialogue whose ``memory_verify`` task has a final label: the verified gold memories
    (accepted candidates, edited ones with their edits, added ones) and the rejected candidates with
    their reasons. ``{dialogue_id: {task_id, decided_by, memories, rejected, accepted, edited, added}}``."""
    finals = final_labels(store, MEMORY_KIND)
    out: dict[str, dict[str, Any]] = {}
    for task in store.labels.tasks(kind=MEMORY_KIND):
        fl = finals[task.task_id]
        if task.is_gold or fl.values is None:
            continue
        sid = task.payload["dialogue_id"]
        turns = Normalized(store.content.original_turns(sid))  # once per dialogue, not per memory
        cands = {c["key"]: c for c in task.payload["candidates"]}
        memories: list[dict[str, Any]] = []
        rejected: list[dict[str, Any]] = []
        counts = {"accept": 0, "edit": 0, "add": 0}
        for d in fl.values["decisions"]:
            cand = cands.get(d["key"])
            raw = cand["memory"] if cand and isinstance(cand["memory"], dict) else {}
            if d["decision"] == "reject":
                rejected.append(
                    {
                        "key": d["key"],
                        "model": cand and cand["model"],
                        "memory": raw,
                        "reason": d.get("reason"),
                    }
                )
                continue
            try:
                memories.append(_gold_memory(len(memories) + 1, sid, d.get("edited") or {}, raw, turns))
            except ValueError as exc:  # accepted as is, but the model's output is not a valid memory
                why = f"{d['decision']}ed but not a valid memory: {str(exc).splitlines()[0]}"
                rejected.append(
                    {"key": d["key"], "model": cand and cand["model"], "memory": raw, "reason": why}
                )
                continue
            counts[d["decision"]] += 1
        for added in fl.values.get("added", []):
            counts["add"] += 1
            memories.append(_gold_memory(len(memories) + 1, sid, added, {}, turns))
        out[sid] = {
            "task_id": task.task_id,
            "decided_by": fl.decided_by,
            "memories": memories,
            "rejected": rejected,
            "accepted": counts["accept"],
            "edited": counts["edit"],
            "added": counts["add"],
        }
    return out


def verified_gold_evidence(
    store: ProjectStore, gold: dict[str, dict[str, Any]] | None = None
) -> tuple[int, list[dict[str, Any]]]:
    """``(memories checked, failures)`` of the evidence check over the verified gold memories; a
    failure is ``{dialogue_id, memory_id, status, problem}``."""
    gold = verified_gold(store) if gold is None else gold
    n, fails = 0, []
    for sid in sorted(gold):
        turns = Normalized(store.content.original_turns(sid))
        for m in gold[sid]["memories"]:
            n += 1
            v = check_memory(m, turns, cite_required=True)
            if v.status != "pass":
                fails.append(
                    {"dialogue_id": sid, "memory_id": m["memory_id"], "status": v.status, "problem": v.reason}
                )
    return n, fails
