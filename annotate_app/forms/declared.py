"""The form of every declared task kind (``kinds/<name>.toml``), drawn from its declaration.

The item's fields come first, as text (never markup): a chat as its turns, a list as a bulleted list,
all in the item's header element (:meth:`DeclaredForm.lead`). Then one control per question, its
title above it: a label or rating question is a row of choices, a multi_label question a row of
toggles, a ranking the values clicked best first, a text question a text box, a span question its label's choices above
the field's words, selected with the word picker the evidence spans use (:func:`spans.picker`). Digits 1-9 choose the
choices of the first label or rating question; Ctrl+Enter submits. On the assisted arm the
controls start from the model's suggestion (``prefkit suggest``), marked until submitted. A form is made per kind
(``TaskKind.app_form`` names this class; the registry makes one for the kind it shows).
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import TYPE_CHECKING, Any

import streamlit as st
from prefkit.annotate_app import forms, spans, ui
from prefkit.annotate_app.forms import suggestion
from prefkit.annotate_app.forms.text import excerpt
from prefkit.annotate_app.safe_text import md_escape

if TYPE_CHECKING:
    from prefkit.curation.annotation.declared import DeclaredKind, QuestionDecl
    from prefkit.curation.annotation.workflow import ShownItem
    from prefkit.curation.project import Project

#: The key of the container of the digit keys: the page stylesheet hides it (``display: none``).
KEYS = "prefkit-keys-"


def answer_key(prefix: str, name: str) -> str:
    """The widget state of question ``name`` on the form ``prefix``: in a namespace of its own, so a
    question called ``comment``, ``note`` or ``submit`` never meets the page's own keys."""
    return f"{prefix}:q:{name}"


def _why(offered: Any) -> str:
    """What the suggestion says of itself (its detail: a reason, the checks that failed)."""
    failed = (detail := offered.detail or {}).get("failed")
    reason = f" — {detail['reason']}" if detail.get("reason") else ""
    return reason + ("" if failed is None else " — failed checks: " + (", ".join(failed) or "none"))


def sessions(turns: list[dict[str, Any]]) -> list[str]:
    """The session header drawn above each turn of a chat ('' for none): a turn's ``session`` and
    ``date`` where they change (a header is never a turn: turn numbers stay the turns')."""
    out, last = [], ("", "")
    for t in turns:
        now = (t.get("session") or "", t.get("date") or "")
        out.append(" · ".join(x for x in now if x) if any(now) and now != last else "")
        last = now if any(now) else last
    return out


class DeclaredForm:
    """``render`` / ``edit`` / ``unit_title`` (and ``lead``, ``summary``, ``describe``, ``cell``) of
    one declared kind."""

    def __init__(self, kind: DeclaredKind):
        self.kind = kind
        self.chat = {f.name for f in kind.declaration.fields if f.type == "chat"}
        questions = kind.declaration.questions
        choosing = [q for q in questions if q.type in ("label", "rating")]
        #: ``(question, choice, key)`` of every keyed choice: the questions' own ``keys``, else digits
        #: 1-9 for the choices of the first label or rating question.
        self.keyed = [
            (q, c, k) for q in choosing if q.keys for c, k in zip(q.choices(), q.keys, strict=True)
        ] or [(q, c, str(n)) for q in choosing[:1] for n, c in enumerate(q.choices()[:9], 1)]
        self.keyed.sort(key=lambda qck: qck[2])
        #: A kind whose one question is a required choice: a key (or click) labels the item and moves on.
        self.at_once = choosing[0] if len(questions) == len(choosing) == 1 and choosing[0].required else None
        #: The comment box under the skip/report switch, unless the labels carry a comment of their own
        #: beside several answers (then it is drawn with them).
        self.COMMENT_IN_PANEL = self.at_once is not None or not kind.declaration.comment
        self.SHORTCUTS = (
            *((k, f"{q.text()}: {q.word(c)}") for q, c, k in self.keyed),
            *(() if self.at_once else (("Ctrl+Enter", "Submit the item"),)),
            *(
                (
                    ("Tab, arrows, Shift+arrow", "Mark words: move to a turn's words, take more"),
                    ("Enter", "Mark the words in reach, or unmark marked ones"),
                )
                if self.marked
                else ()
            ),
        )

    @property
    def marked(self) -> dict[str, QuestionDecl]:
        """``{field: its span question}``: those fields are drawn once, in the word picker."""
        return {q.field: q for q in self.kind.declaration.questions if q.type == "span" and q.field}

    @property
    def PANES(self) -> bool:  # noqa: N802 - read like the forms' other flags
        """A long item (a chat, or a field to mark words in): drawn in panes (:meth:`_panes`); the
        item's header then leaves the fields to the form."""
        return self.at_once is None and any(self._long(f) for f in self.kind.declaration.fields)

    def _long(self, field: Any) -> bool:
        return field.type == "chat" or field.name in self.marked

    def _ranked(self) -> set[str]:
        """The fields a ranking shows in full beside its places (not drawn again above)."""
        return {
            v
            for q in self.kind.declaration.questions
            if isinstance(q.values_from, list)
            for v in q.values_from
        }

    # -- the item --
    def lead(self, task, only: Any = None) -> str:
        """The fields of the item (those ``only`` keeps) as escaped markdown, titled (one element for
        them all); a field a span question marks is left to the word picker."""
        parts = []
        for field in self.kind.declaration.fields:
            if field.name in self.marked or (only is not None and not only(field)):
                continue
            value = task.payload.get(field.name)
            title = f"**{md_escape(field.title or field.name.replace('_', ' ').capitalize())}**"
            if field.type == "chat":
                turns, heads = [], sessions(value or [])
                for t, head in zip(value or [], heads, strict=True):
                    turns.append(
                        (f"**{md_escape(head)}**\n\n" if head else "")
                        + f"{ui.ROLE_AVATARS.get(t['role'], ':material/chat:')} :small[:gray[{md_escape(t['role'])}]]"
                        f"\n\n{md_escape(t['content'])}"
                    )
                parts.append(title + "\n\n" + "\n\n---\n\n".join(turns))
            elif field.type == "list":
                parts.append(title + "\n\n" + "\n".join(f"- {md_escape(v)}" for v in value or []))
            else:
                parts.append(title + "  \n" + md_escape(value))
        return "\n\n".join(parts)

    # -- the questions --
    def _control(
        self, q: QuestionDecl, prefix: str, initial: dict[str, Any], keys: bool, task, where: Any = st
    ) -> Any:
        # The declaration is the project's own text, like its guidelines: a title is the label as written.
        title = q.heading()
        mine = [k for kq, _, k in self.keyed if kq is q]
        if keys and mine:
            title += f" (keys {', '.join(mine)})"
        key, default = answer_key(prefix, q.name), initial.get(q.name)
        if q.type == "span":
            return self._spans(q, task, key, title, default, where)
        if q.type == "multi_label":
            return st.segmented_control(title, q.choices(), selection_mode="multi", default=default, key=key)
        if q.type in ("label", "rating"):  # required: a click on the chosen (or suggested) value keeps it
            return where.segmented_control(
                title, q.ordered(), default=default, key=key, format_func=q.word, required=q.required
            )
        if q.type == "ranking":
            return self._ranking(q, task, title + " — click them best first", key, default)
        return st.text_area(title, value=default or "", max_chars=q.max_length, key=key, height=80)

    def _ranking(self, q: QuestionDecl, task, title: str, key: str, default: Any) -> Any:
        """The values clicked best first; values from the item's fields are named by the fields' titles
        and shown in full, each beside its place (``–`` while not placed)."""
        choices, texts = q.choices(task.payload), self._texts(q, task)
        word = (lambda v: texts[v][0]) if texts else str
        order = st.multiselect(  # no "Select all": an order is what the person placed, value by value
            title,
            choices,
            default=default,
            key=key,
            placeholder="best first",
            format_func=word,
            select_all=False,
        )
        if texts:
            place = {v: n for n, v in enumerate(order or [], 1)}
            st.markdown(
                "\n".join(
                    f"- **{place.get(v, '–')} · {md_escape(texts[v][0])}** — {md_escape(texts[v][1])}"
                    for v in sorted(choices, key=lambda v: place.get(v, len(choices) + 1))
                )
            )
        return order

    def _texts(self, q: QuestionDecl, task) -> dict[str, tuple[str, str]]:
        """``{value: (its name, its text)}`` of a ranking ``values_from`` the item's text fields."""
        if not isinstance(q.values_from, list):
            return {}
        titles = {
            f.name: f.title or f.name.replace("_", " ").capitalize() for f in self.kind.declaration.fields
        }
        return {v: (titles[v], str(task.payload.get(v) or "")) for v in q.values_from}

    def _turns(self, q: QuestionDecl, task) -> list[dict[str, Any]]:
        """The span question's field as the picker's turns (a text field is one, headed by its title)."""
        shown = task.payload.get(q.field or "")
        if q.field in self.chat:
            return [
                {"index": n, "role": t["role"], "content": t["content"], "session": head}
                for n, (t, head) in enumerate(zip(shown or [], sessions(shown or []), strict=True))
            ]
        head = next(f.title or f.name for f in self.kind.declaration.fields if f.name == q.field)
        return [{"index": 0, "role": "", "content": shown or "", "head": head}]

    def _spans(
        self, q: QuestionDecl, task, key: str, title: str, default: Any, where: Any = st
    ) -> list[dict[str, Any]]:
        """The label to mark with, then the field's words in the picker (in ``where``: the item's pane,
        its one view of the field): a selection is a span of that label, a click on a marked span
        removes it."""
        turns = {t["index"]: t["content"] for t in self._turns(q, task)}
        if key not in st.session_state:  # an edited label's or a suggestion's spans
            st.session_state[key] = [{"turn": 0, **s} for s in default or []]
        kept = [  # with their words (a draft's are checked: the item may have changed since)
            {**s, "text": words}
            for s in st.session_state[key]
            for words in [turns.get(s["turn"], "")[s["start"] : s["end"]]]
            if words and s.get("text", words) == words
        ]
        st.session_state[key] = kept
        label = st.segmented_control(title, q.labels or [], default=(q.labels or [""])[0], key=f"{key}:label")

        def pick(span: dict[str, Any]) -> None:
            mine = label or (q.labels or [""])[0]
            st.session_state[key] = [*st.session_state[key], {**span, "label": mine}]

        def drop(span: dict[str, Any]) -> None:
            at = (span["turn"], span["start"], span["end"])
            st.session_state[key] = [
                s for s in st.session_state[key] if (s["turn"], s["start"], s["end"]) != at
            ]

        hint = (
            "Choose the label above, then select its words (drag, double-click a word, or Tab to the text: "
            "arrows, Shift+arrow, Enter); click marked words, or Enter on them, to unmark them."
        )
        with where if where is not st else nullcontext():
            if where is not st:  # in the fields' pane: titled like the other fields
                field = next(f for f in self.kind.declaration.fields if f.name == q.field)
                st.markdown(f"**{md_escape(field.title or field.name.replace('_', ' ').capitalize())}**")
            spans.picker(f"{key}:words", self._turns(q, task), kept, hint, pick, drop)
        return self._answer(q, kept)

    def _answer(self, q: QuestionDecl, value: Any) -> Any:
        """A span question's picked spans as its answer (offsets, label, and the turn on a chat field)."""
        if q.type != "span":
            return value
        keys = ("turn", "start", "end", "label") if q.field in self.chat else ("start", "end", "label")
        return [{k: s[k] for k in keys} for s in value or []]

    def read(self, task, prefix: str) -> tuple[dict[str, Any] | None, str]:
        """The answers on the form as a label's values, or which questions are still open: a required
        one left empty, a ranking with values not placed yet (only a full order is one chosen)."""
        values, missing = {}, []
        for q in self.kind.declaration.questions:
            value = self._answer(q, st.session_state.get(answer_key(prefix, q.name)))
            n = len(q.choices(task.payload)) if q.type == "ranking" else 0
            if value in (None, [], "") or (isinstance(value, str) and not value.strip()):
                missing += [q.text()] if q.required else []
            elif n and len(value) < n:
                missing.append(f"{q.text()} (every value placed: {len(value)} of {n} so far)")
            else:
                values[q.name] = value
        return (None, "Answer " + "; ".join(missing) + " first.") if missing else (values, "")

    def _choose(self, prefix: str, name: str, value: Any) -> None:
        st.session_state[answer_key(prefix, name)] = value

    def _at_once(self, user: str, shown: ShownItem, offered: Any) -> None:
        """The one question's choices as buttons in the action bar: a click or key labels the item
        (a suggested value confirmed with Enter, marked as a suggestion)."""
        q, prefix = self.at_once, shown.event_id
        assert q is not None
        suggested = (offered.values or {}).get(q.name) if offered else None
        row, keys = ui.action_bar(shown), {c: k for _, c, k in self.keyed}
        if suggested is not None:
            row.button(
                suggestion.confirm_label(offered, q.word(suggested)),
                shortcut="Enter",
                key=f"{prefix}:confirm",
                icon=suggestion.ICON,
                type="primary",
                help=f"Suggested by {suggestion.source(offered)}",
                on_click=ui.submit_now,
                args=(user, shown, prefix, {q.name: suggested}),
            )
        for value in q.ordered():
            row.button(
                q.word(value),
                shortcut=keys.get(value),
                key=f"{prefix}:{value}",
                width="stretch",
                type="secondary" if suggested is not None else "primary",
                icon=suggestion.ICON if value == suggested else None,
                on_click=ui.submit_now,
                args=(user, shown, prefix, {q.name: value}),
            )

    def render(self, project: Project, user: str, shown: ShownItem) -> None:
        prefix = shown.event_id
        offered = suggestion.shown(project, user, shown)  # None on the control arm: nothing to draw
        if self.at_once is not None:
            return self._at_once(user, shown, offered)
        if self.keyed:  # the keys, as buttons the page never shows (the key guard presses them)
            hidden = st.container(key=f"{KEYS}{prefix}")
            for n, (q, value, k) in enumerate(self.keyed, start=1):
                hidden.button(
                    q.word(value),
                    shortcut=k,
                    key=f"{prefix}:k{n}",
                    on_click=self._choose,
                    args=(prefix, q.name, value),
                )
        initial = (offered.values or {}) if offered else {}
        side, long = self._panes(shown) if self.PANES else (nullcontext(), st)
        # Only single choices to make (and no panes): they go in the action bar with Submit.
        choosing = all(q.type in ("label", "rating") for q in self.kind.declaration.questions)
        where = ui.action_bar(shown) if choosing and not self.PANES else st
        with side:
            if offered and initial:
                st.markdown(
                    suggestion.note(offered, md_escape(self.describe(shown.task, initial) + _why(offered)))
                )
            if not self.COMMENT_IN_PANEL:  # a kind whose labels carry a comment: its box beside the answers
                st.text_input("Comment (optional)", key=f"{prefix}:comment")
            for q in self.kind.declaration.questions:
                at = long if q.type == "span" else where
                self._control(q, prefix, initial, keys=True, task=shown.task, where=at)
        forms.submit_button(user, shown, prefix)

    def _panes(self, shown: ShownItem) -> tuple[Any, Any]:
        """The long item's panes (page_script.css places them): the short fields, the questions, the
        long fields (a marked one in the word picker), then the action bar with Submit; returns the
        questions' pane and the long fields'."""
        prefix, task, ranked = shown.event_id, shown.task, self._ranked()
        panes = st.container(key=f"prefkit-panes-{prefix}")
        short, side, long = (panes.container(key=f"prefkit-{p}-{prefix}") for p in ("short", "side", "long"))
        with panes:
            ui.action_bar(shown)  # the bar is the panes' last child: Submit beside the questions
        short.markdown(self.lead(task, only=lambda f: not self._long(f) and f.name not in ranked))
        if any(f.type == "chat" and f.name not in self.marked for f in self.kind.declaration.fields):
            long.markdown(self.lead(task, only=self._long))
        return side, long

    def edit(
        self,
        project: Project,
        task,
        prefix: str,
        initial: dict[str, Any],
        comment: str | None,
        show_comment: bool = True,
    ) -> None:
        st.markdown(self.lead(task))
        for q in self.kind.declaration.questions:
            self._control(q, prefix, initial, keys=False, task=task)
        if show_comment:
            st.text_input("Comment", value=comment or "", key=f"{prefix}:comment")

    def marked_text(self, task, q: QuestionDecl, spans: list[dict[str, Any]], turns: list[int]) -> str:
        """``spans`` drawn in the text of ``turns`` of the span question's field (escaped markdown, each
        span highlighted and, on a question of several labels, labelled): one annotator's row."""
        shown, lines = self._turns(q, task), []
        for n in turns:
            text, at, out = shown[n]["content"], 0, []
            for s in sorted((s for s in spans or [] if s.get("turn", 0) == n), key=lambda s: s["start"]):
                if s["start"] < at:
                    continue
                tag = f" :small[{md_escape(s['label'])}]" if len(q.labels or ()) > 1 else ""
                out += [
                    md_escape(text[at : s["start"]]),
                    f":orange-background[{md_escape(text[s['start'] : s['end']])}{tag}]",
                ]
                at = s["end"]
            head = f":small[:gray[turn {n} · {md_escape(shown[n]['role'])}]] " if q.field in self.chat else ""
            lines.append(head + "".join([*out, md_escape(text[at:])]))
        return "\n\n".join(lines)

    # -- words for tables --
    def unit_title(self, task, unit: str, field: str) -> str:
        q = self.kind.question_of(field)
        label = field.partition(":")[2] or unit
        if q.type == "span":  # unit: turn:word:start:end
            turn, _w, a, b = unit.split(":")
            text = self._turns(q, task)[int(turn or 0)]["content"][int(a) : int(b)]
            return f"{q.text()}: {label} · “{text}”" + (f" (turn {turn})" if turn else "")
        return f"{q.text()}: {label}" if label else q.text()

    def summary(self, task) -> str:
        """The kind's summary field (``summary``, else the first text field), else its first field."""
        if self.kind.declaration.summary_field():
            return excerpt(self.kind.summary(task.payload), 100)
        first = self.kind.declaration.fields[0]
        value = task.payload.get(first.name)
        if first.type == "chat":
            value = [turn["content"] for turn in value or []]
        return excerpt(value if first.type == "text" else " / ".join(map(str, value or [])), 100)

    def describe(self, task, values: dict[str, Any]) -> str:
        return "; ".join(f"{q}: {self._word(v, task, self.kind.questions.get(q))}" for q, v in values.items())

    def cell(self, task, values: dict[str, Any], unit: str, field: str) -> str:
        value = self.kind.item_units(values, task).get((unit, field))
        return "–" if value is None else self._word(value, task, self.kind.question_of(field))

    def _word(self, value: Any, task, q: QuestionDecl | None) -> str:
        if q is not None and q.type == "span" and isinstance(value, list):
            turns = self._turns(q, task)
            return ", ".join(
                f"“{turns[s.get('turn', 0)]['content'][s['start'] : s['end']]}” ({s['label']})" for s in value
            )
        word = q.word if q is not None else str
        return " > ".join(map(word, value)) if isinstance(value, list) else word(value)
