"""Memory verification: the dialogue beside candidate memories from several models, grouped by
similarity; accept / edit / reject each (with a reason), add what the models missed.

Keys: A accepts every undecided candidate, Ctrl+Enter submits.

On an item of the assisted arm with a suggestion (``prefkit suggest --kind memory_verify``) every
candidate starts decided as suggested (accept when its quote is found in the dialogue, and the judge,
when one was asked, agrees; reject as *not grounded* otherwise), under a note saying so, and each
candidate says what the suggestion found; Ctrl+Enter confirms them all, any change is the
annotator's. The control arm shows none of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import streamlit as st
from prefkit.annotate_app import forms, screen, spans, ui
from prefkit.annotate_app.forms import suggestion
from prefkit.annotate_app.forms.text import excerpt
from prefkit.annotate_app.safe_text import md_escape
from prefkit.curation.annotation import workflow
from prefkit.curation.annotation.kinds.memory_verify import REJECT_REASONS
from prefkit.curation.quality.evidence import find_quote
from prefkit.schemas.alpsbench import DOCUMENTED_TIME_SCOPES, OBSERVED_TIME_SCOPES, TAXONOMY, TaxonomyLabel
from pydantic import TypeAdapter, ValidationError

if TYPE_CHECKING:
    from prefkit.curation.project import Project

DECISIONS = ("accept", "edit", "reject")
TIME_SCOPES = DOCUMENTED_TIME_SCOPES + OBSERVED_TIME_SCOPES
PER_ROW = 3

#: The keys of this form, for the help overlay (``?``).
SHORTCUTS = (
    ("A", "Accept every candidate not decided yet"),
    ("Ctrl+Enter", "Submit the item"),
)


def _raw(c: dict[str, Any]) -> dict[str, Any]:
    return c["memory"] if isinstance(c["memory"], dict) else {"value": str(c["memory"])}


def _seed(prefix: str, task, initial: dict[str, Any] | None) -> None:
    if st.session_state.get(f"{prefix}:seeded"):
        return
    st.session_state[f"{prefix}:seeded"] = True
    added = (initial or {}).get("added", [])
    st.session_state[f"{prefix}:added"] = list(range(len(added)))
    for i, mem in enumerate(added):
        _seed_fields(f"{prefix}:add{i}", mem, task.payload["turns"])
        st.session_state[f"{prefix}:addsp:{i}"] = list(mem.get("spans") or [])
    for d in (initial or {}).get("decisions", []):
        st.session_state[f"{prefix}:d:{d['key']}"] = d["decision"]
        st.session_state[f"{prefix}:sp:{d['key']}"] = list(d.get("spans") or [])
        if d.get("reason"):
            st.session_state[f"{prefix}:why:{d['key']}"] = d["reason"]
        if d.get("edited"):
            _seed_fields(f"{prefix}:e:{d['key']}", d["edited"], task.payload["turns"])


def _label_choice(label: Any) -> str:
    """The taxonomy entry a memory's label names: as written when it is one (or any well-formed path,
    kept as written), spaces around ``/`` forgiven (``Preferences / Food``), else ``UNMAPPED``."""
    if not isinstance(label, str):
        return "UNMAPPED"
    tidy = "/".join(part.strip() for part in label.split("/"))
    if tidy in TAXONOMY:
        return tidy
    try:
        TypeAdapter(TaxonomyLabel).validate_python(tidy)
    except ValidationError:
        return "UNMAPPED"
    return tidy


def start_fields(mem: dict[str, Any], turns: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """What an edit of ``mem`` starts from: the memory as written, field by field: its value, label
    (full path), type, time scope, evidence turn and quote, confidence. A memory that cites no turn
    (a model's extraction quotes only) points at the turn the quote is found in."""
    evidence: dict[str, Any] = mem["evidence"] if isinstance(mem.get("evidence"), dict) else {}
    text = mem.get("evidence_text") or evidence.get("text") or ""
    index = mem.get("evidence_turn", evidence.get("utterance_index"))
    if isinstance(index, list):  # the real gold sometimes cites several utterances: the first
        index = next((i for i in index if isinstance(i, int) and not isinstance(i, bool)), None)
    n_turns = len(turns) if turns is not None else None
    if (
        not isinstance(index, int)
        or isinstance(index, bool)
        or index < 0
        or (n_turns is not None and index >= n_turns)
    ):
        index = None
    if index is None and text and turns:
        index = find_quote(str(text), [(t["index"], t["content"]) for t in turns])
    conf = mem.get("confidence")
    scope = mem.get("time_scope")
    return {
        "value": str(mem.get("value") or ""),
        "label": _label_choice(mem.get("label")),
        "type": mem.get("type") if mem.get("type") in ("direct", "indirect") else None,
        "time_scope": scope.strip() if isinstance(scope, str) and scope.strip() else "unknown",
        "evidence_turn": index,
        "evidence_text": str(text),
        "confidence": float(conf)
        if isinstance(conf, int | float) and not isinstance(conf, bool) and 0 <= conf <= 1
        else None,
    }


_WIDGETS = (
    ("value", "value"),
    ("label", "label"),
    ("type", "type"),
    ("time_scope", "scope"),
    ("evidence_turn", "turn"),
    ("evidence_text", "evidence"),
    ("confidence", "confidence"),
)


def _seed_fields(key: str, mem: dict[str, Any], turns: list[dict[str, Any]] | None = None) -> None:
    start = start_fields(mem, turns)
    for field, widget in _WIDGETS:
        st.session_state[f"{key}:{widget}"] = start[field]


def _with(options: tuple[str, ...], value: Any) -> list[str]:
    """``options`` and, when it is not one of them, the value the memory already has (kept as written)."""
    return list(options) if value in options or value is None else [*options, value]


def fields(key: str, turns: list[dict[str, Any]], start: dict[str, Any]) -> None:
    """Inputs of one memory (an edit or an added one); untouched inputs start from ``start`` (the
    memory as written: :func:`start_fields`). The label has a row of its own: its full path shows."""
    if f"{key}:value" not in st.session_state:
        _seed_fields(key, start, turns)
    st.text_input("Value", key=f"{key}:value")
    st.selectbox("Label", _with(TAXONOMY, st.session_state.get(f"{key}:label")), key=f"{key}:label")
    c1, c2 = st.columns(2)
    c1.radio("Type", ("direct", "indirect"), horizontal=True, key=f"{key}:type")
    c2.selectbox("Time scope", _with(TIME_SCOPES, st.session_state.get(f"{key}:scope")), key=f"{key}:scope")
    c1.selectbox(
        "Evidence turn",
        [None, *range(len(turns))],
        key=f"{key}:turn",
        format_func=lambda t: "—" if t is None else f"turn {t}",
    )
    c2.number_input("Confidence", min_value=0.0, max_value=1.0, step=0.05, key=f"{key}:confidence")
    st.text_input("Evidence text (quoted from that turn)", key=f"{key}:evidence")


def _read_fields(key: str) -> dict[str, Any]:
    out = {k: st.session_state.get(f"{key}:{k}") for k in ("value", "label", "type")}
    out["time_scope"] = st.session_state.get(f"{key}:scope")
    turn = st.session_state.get(f"{key}:turn")
    if turn is not None:
        out["evidence_turn"] = turn
    if (st.session_state.get(f"{key}:evidence") or "").strip():
        out["evidence_text"] = st.session_state[f"{key}:evidence"].strip()
    if st.session_state.get(f"{key}:confidence") is not None:
        out["confidence"] = round(float(st.session_state[f"{key}:confidence"]), 4)
    return out


def _found(why: dict[str, Any]) -> str:
    """What a suggestion found for one candidate, in words (plain text: escaped by the caller)."""
    turn = why.get("found_in")
    words = f"quote found in turn {turn}" if turn is not None else "quote not found in the dialogue"
    judge = why.get("judge")
    if isinstance(judge, dict):
        words += "; judge: " + ("supported" if judge.get("supported") else "not supported")
        if judge.get("reason"):
            words += f" ({excerpt(str(judge['reason']), 80)})"
    return words


def _suggested_line(helped, key: str) -> str:
    """The candidate's suggested decision and why, as escaped markdown ("" without a suggestion)."""
    if helped is None:
        return ""
    mine = next((d for d in (helped.values or {}).get("decisions", []) if d["key"] == key), None)
    if mine is None:
        return ""
    why = ((helped.detail or {}).get("memories") or {}).get(key) or {}
    said = mine["decision"].capitalize() + (" (not grounded)" if mine.get("reason") == "not_grounded" else "")
    return "\n\n" + ui.safe(":small[:violet[" + suggestion.ICON + " suggested: {} · {}]]", said, _found(why))


def candidate(task, c: dict[str, Any], prefix: str, helped=None) -> None:
    raw = _raw(c)
    text = ui.safe(":small[:gray[{} · {} · {}]]\n\n", c["model"], raw.get("label", "?"), raw.get("type", "?"))
    text += md_escape(str(raw.get("value", "")))
    if raw.get("evidence_text"):
        text += ui.safe("\n\n:small[:gray[{}]]", "“" + str(raw["evidence_text"]) + "”")
    for span in st.session_state.get(f"{prefix}:sp:{c['key']}", []):  # the words the annotator selected
        text += ui.safe("\n\n:small[:orange[your evidence: “{}” (turn {})]]", span["text"], span["turn"])
    text += _suggested_line(helped, c["key"])  # the assisted arm only: what the suggestion found
    st.markdown(text)  # model, value and evidence in one element (the browser redraws each one per item)
    for flag in c.get("evidence_flags") or []:
        st.warning(ui.safe("evidence check: {}", str(flag).replace("_", " ")), icon=":material/search:")
    if not c.get("valid", True):
        st.error(
            "invalid output: " + md_escape("; ".join(c.get("problems") or [])), icon=":material/warning:"
        )
    key = c["key"]
    # required: a click on the chosen (or suggested) decision keeps it, another value changes it
    choice = st.segmented_control(
        "Decision",
        DECISIONS,
        key=f"{prefix}:d:{key}",
        format_func=str.capitalize,
        label_visibility="collapsed",
        required=True,
    )
    screen.row_problem(prefix, f"cand:{key}")  # why a submit stopped, at this candidate
    if choice == "edit":
        fields(f"{prefix}:e:{key}", task.payload["turns"], raw)
    elif choice == "reject":  # the reason starts empty: a rejection says why in the annotator's words
        st.session_state.setdefault(f"{prefix}:why:{key}", None)
        st.selectbox(
            "Reason",
            REJECT_REASONS,
            key=f"{prefix}:why:{key}",
            placeholder="Choose why",
            format_func=lambda r: r.replace("_", " "),
        )


def _accept_rest(prefix: str, keys: list[str]) -> None:
    for key in keys:
        st.session_state.setdefault(f"{prefix}:d:{key}", None)
        if st.session_state[f"{prefix}:d:{key}"] is None:
            st.session_state[f"{prefix}:d:{key}"] = "accept"


def _add(prefix: str) -> None:
    have = st.session_state[f"{prefix}:added"]
    st.session_state[f"{prefix}:added"] = [*have, max(have, default=-1) + 1]


def _remove(prefix: str, i: int) -> None:
    st.session_state[f"{prefix}:added"] = [j for j in st.session_state[f"{prefix}:added"] if j != i]


def candidates(task, prefix: str, helped=None) -> None:
    groups: dict[int, list[dict[str, Any]]] = {}
    for c in task.payload["candidates"]:
        groups.setdefault(c.get("group", 0), []).append(c)
    for g, members in sorted(groups.items()):
        with st.container(border=True):
            st.caption(f"group {g + 1} · {len(members)} candidate(s)")
            for start in range(0, len(members), PER_ROW):
                row = members[start : start + PER_ROW]
                if len(row) == 1:  # no columns around a candidate alone in its group
                    candidate(task, row[0], prefix, helped)
                    continue
                for col, c in zip(st.columns(len(row)), row, strict=True):
                    with col:
                        candidate(task, c, prefix, helped)
    st.markdown("**Missing memories**")
    for pos, i in enumerate(st.session_state[f"{prefix}:added"]):
        with st.container(border=True):
            st.caption(f"Missing memory {pos + 1}")  # the name messages use for this row
            screen.row_problem(prefix, f"added{pos}")
            fields(f"{prefix}:add{i}", task.payload["turns"], {"value": ""})
            st.button("Remove", key=f"{prefix}:rm{i}", on_click=_remove, args=(prefix, i), type="tertiary")
    st.button(
        "Add a missing memory", key=f"{prefix}:addbtn", on_click=_add, args=(prefix,), icon=":material/add:"
    )


def values(task, prefix: str) -> tuple[dict[str, Any] | None, int]:
    decisions, missing = [], 0
    for c in task.payload["candidates"]:
        choice = st.session_state.get(f"{prefix}:d:{c['key']}")
        if choice is None:
            missing += 1
            continue
        d: dict[str, Any] = {"key": c["key"], "decision": choice}
        if choice == "edit":
            d["edited"] = _read_fields(f"{prefix}:e:{c['key']}")
        if choice == "reject":
            d["reason"] = st.session_state.get(f"{prefix}:why:{c['key']}")
            if d["reason"] is None:  # rejected without a reason chosen: not a label yet
                missing += 1
                continue
        elif st.session_state.get(f"{prefix}:sp:{c['key']}"):  # words kept with a memory that is kept
            d["spans"] = list(st.session_state[f"{prefix}:sp:{c['key']}"])
        decisions.append(d)
    added = []
    for i in st.session_state[f"{prefix}:added"]:
        mem = _read_fields(f"{prefix}:add{i}")
        if st.session_state.get(f"{prefix}:addsp:{i}"):
            mem["spans"] = list(st.session_state[f"{prefix}:addsp:{i}"])
        added.append(mem)
    return ({"decisions": decisions, "added": added} if not missing else None), missing


def render(project: Project, user: str, item: workflow.ShownItem) -> None:
    prefix, task = item.event_id, item.task
    helped = suggestion.shown(project, user, item)  # None on the control arm: nothing to draw
    _seed(prefix, task, helped.values if helped else None)  # a suggestion seeds the decisions
    left, right = st.columns([2, 3], gap="large")
    with left:
        selecting = spans.toggle()
        if selecting:
            target = st.selectbox(
                "Evidence for",
                _targets(task, prefix),
                key=f"{prefix}:target",
                format_func=lambda t: _target_title(task, t),
            )
        with ui.dialogue_box(720, prefix):
            if not selecting or target is None:
                ui.transcript(workflow.display_turns(project, task))
            else:  # the words that show the chosen memory, selected with the mouse
                spans.picker(
                    f"{prefix}:picker",
                    workflow.display_turns(project, task),
                    st.session_state.get(_span_key(prefix, target), []),
                    "Select the words that show this memory; click a highlight to remove it.",
                    lambda span: _pick(prefix, target, span),
                    lambda span: _unpick(prefix, target, span),
                )
    with right:
        keys = [c["key"] for c in task.payload["candidates"]]
        if helped:
            st.markdown(suggestion.note(helped, md_escape(_summary(helped))))
        with st.container(height=620, key=f"candidates-{prefix}"):
            candidates(task, prefix, helped)
        st.text_input("Comment (optional)", key=f"{prefix}:comment")
    # under both panes (stacked in a narrow window), kept in the window: the decision's key and Submit
    ui.action_bar(item).button(
        "Accept all undecided", shortcut="A", key=f"{prefix}:acc", on_click=_accept_rest, args=(prefix, keys)
    )
    forms.submit_button(user, item, prefix)


def _summary(helped) -> str:
    """A memory suggestion in a few words: how many candidates it would keep and reject."""
    decisions = (helped.values or {}).get("decisions", [])
    kept = sum(d["decision"] == "accept" for d in decisions)
    return f"{kept} supported, {len(decisions) - kept} not grounded"


def _targets(task, prefix: str) -> list[str]:
    """What selected words can be evidence for: every candidate not rejected, every added memory."""
    keys = [
        c["key"]
        for c in task.payload["candidates"]
        if st.session_state.get(f"{prefix}:d:{c['key']}") != "reject"
    ]
    return keys + [f"add:{i}" for i in st.session_state.get(f"{prefix}:added", [])]


def _target_title(task, target: str) -> str:
    if target.startswith("add:"):
        return f"the memory you added ({int(target[4:]) + 1})"
    c = next(c for c in task.payload["candidates"] if c["key"] == target)
    return f"“{excerpt(_raw(c).get('value', ''), 60)}” ({c['model']})"


def _span_key(prefix: str, target: str) -> str:
    return f"{prefix}:addsp:{target[4:]}" if target.startswith("add:") else f"{prefix}:sp:{target}"


def _pick(prefix: str, target: str, span: dict[str, Any]) -> None:
    """Selected words become the target's evidence; an edited or added memory with no quote yet takes
    them as its evidence turn and text too."""
    key = _span_key(prefix, target)
    have = [s for s in st.session_state.get(key, []) if s != span]
    st.session_state[key] = sorted([*have, span], key=lambda s: (s["turn"], s["start"]))
    fields_key = f"{prefix}:add{target[4:]}" if target.startswith("add:") else f"{prefix}:e:{target}"
    if f"{fields_key}:evidence" in st.session_state and not st.session_state[f"{fields_key}:evidence"]:
        st.session_state[f"{fields_key}:evidence"] = span["text"]
        st.session_state[f"{fields_key}:turn"] = span["turn"]


def _unpick(prefix: str, target: str, span: dict[str, Any]) -> None:
    key, where = _span_key(prefix, target), (span["turn"], span["start"], span["end"])
    st.session_state[key] = [
        s for s in st.session_state.get(key, []) if (s["turn"], s["start"], s["end"]) != where
    ]


def read(task, prefix: str) -> tuple[dict | None, str | screen.Problem]:
    """The label, or what stops it, in words and by row: the candidates still undecided (by their
    text), an edit or a missing memory whose value is empty (by its name on screen)."""
    vals, _ = values(task, prefix)
    said: list[str] = []
    rows: dict[str, str] = {}
    cands = task.payload["candidates"]
    left = [c for c in cands if st.session_state.get(f"{prefix}:d:{c['key']}") is None]
    if left:
        named = "; ".join(f"“{_raw(c).get('value', '')}” ({c['model']})" for c in left[:3])
        more = f" and {len(left) - 3} more" if len(left) > 3 else ""
        said.append(f"Decide every candidate first: {named}{more}.")
        rows |= {
            f"cand:{c['key']}": "Undecided: Accept, Edit or Reject (A accepts every undecided one)."
            for c in left
        }
    why = [
        c
        for c in cands
        if st.session_state.get(f"{prefix}:d:{c['key']}") == "reject"
        and st.session_state.get(f"{prefix}:why:{c['key']}") is None
    ]
    if why:
        said.append(
            "Choose why you reject "
            + "; ".join(f"“{_raw(c).get('value', '')}” ({c['model']})" for c in why)
            + "."
        )
        rows |= {f"cand:{c['key']}": "Rejected: choose the reason (Reason, below)." for c in why}
    for c in cands:
        edited = st.session_state.get(f"{prefix}:d:{c['key']}") == "edit"
        if edited and not str(st.session_state.get(f"{prefix}:e:{c['key']}:value") or "").strip():
            said.append(
                f"The edit of “{_raw(c).get('value', '')}” ({c['model']}) has no value: type the "
                "corrected memory, or choose Accept or Reject."
            )
            rows[f"cand:{c['key']}"] = "The edited value is empty: type the corrected memory."
    for pos, i in enumerate(st.session_state[f"{prefix}:added"]):
        if not str(st.session_state.get(f"{prefix}:add{i}:value") or "").strip():
            said.append(
                f"Missing memory {pos + 1} is empty: type the memory the models missed, or "
                "remove the row (Remove, under it)."
            )
            rows[f"added{pos}"] = "Empty: type the memory the models missed, or remove this row."
        elif st.session_state.get(f"{prefix}:add{i}:type") is None:  # no type is chosen for the person
            said.append(f"Choose the type of missing memory {pos + 1}: direct or indirect.")
            rows[f"added{pos}"] = "Choose its type: direct or indirect."
    return (None, screen.Problem(" ".join(said), rows)) if said else (vals, "")


def edit(
    project: Project,
    task,
    prefix: str,
    initial: dict[str, Any],
    comment: str | None,
    show_comment: bool = True,
) -> None:
    _seed(prefix, task, initial)
    if comment and f"{prefix}:comment" not in st.session_state:
        st.session_state[f"{prefix}:comment"] = comment
    candidates(task, prefix)
    if show_comment:
        st.text_input("Comment", key=f"{prefix}:comment")


def summary(task) -> str:
    first = next((t["content"] for t in task.payload["turns"] if t["role"] == "user"), "")
    n = len(task.payload["candidates"])
    return f"{excerpt(first, 90)} · {n} candidate{'s' if n != 1 else ''}"


def describe(task, values: dict[str, Any]) -> str:
    counts: dict[str, int] = {}
    for d in values.get("decisions", []):
        counts[d["decision"]] = counts.get(d["decision"], 0) + 1
    words = [
        f"{counts[d]} {w}"
        for d, w in (("accept", "accepted"), ("edit", "edited"), ("reject", "rejected"))
        if counts.get(d)
    ]
    if values.get("added"):
        words.append(f"{len(values['added'])} added")
    return ", ".join(words) or "–"


def cell(task, values: dict[str, Any], unit: str, field: str) -> str:
    """A candidate's decision in words: ``Edit → “new value” (label, turn 3)``, ``Reject (too generic)``,
    with the annotator's evidence."""
    d = next((x for x in values.get("decisions", []) if x["key"] == unit), None)
    if d is None:
        return "–"
    if field == "accepted":
        return "Reject" if d["decision"] == "reject" else "Keep"
    if d["decision"] == "reject":
        return f"Reject ({str(d.get('reason') or '').replace('_', ' ')})"
    words = d["decision"].capitalize()
    if d["decision"] == "edit" and d.get("edited"):
        e = d["edited"]
        where = f", turn {e['evidence_turn']}" if e.get("evidence_turn") is not None else ""
        words += f" → “{excerpt(e.get('value'), 60)}” ({e.get('label')}{where})"
        if e.get("evidence_text"):
            words += f" · “{excerpt(e['evidence_text'], 60)}”"
    return words + "".join(f" · “{excerpt(s['text'], 60)}” (turn {s['turn']})" for s in d.get("spans") or [])


def unit_title(task, unit: str, field: str) -> str:
    """An agreement unit as the annotator saw it: the candidate's memory text and model, not its key."""
    for c in task.payload["candidates"]:
        if c["key"] == unit:
            return f"“{_raw(c).get('value', '')}” ({c['model']}) · {field}"
    return f"{unit} · {field}"
