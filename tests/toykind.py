"""A task kind defined entirely in this one module (plus its form and its Label Studio config at the
bottom), the way a fifth kind is added: a label schema, agreement fields, consensus assembly, known
answers, guidelines, and the app form and Label Studio config the kind names; one ``register`` call. Nothing else
in prefkit is edited for it (``tests/test_task_kind_plugin.py`` checks that)."""

from __future__ import annotations

from typing import Literal

from prefkit.curation.annotation.task_kinds import FieldSpec, TaskKind, register
from prefkit.schemas.common import Contract
from pydantic import Field

NAME = "toy_same_meaning"


class ToyLabel(Contract):
    verdict: Literal["same", "different"] = Field(description="Do the two texts mean the same?")
    comment: str | None = Field(default=None, description="Optional note.")


class ToyKind(TaskKind):
    """Does a preference pair's candidate say the same as its checklist item?"""

    name = NAME
    title = "Same meaning (toy)"
    app_form = "toykind:ToyForm"
    labelstudio_config = "toykind:ToyConfig"
    label_model = ToyLabel
    fields = (FieldSpec("verdict", "nominal", ("different", "same")),)

    def build_tasks(self, store, overlap, batch):
        return [
            self.make_task(
                f"toy:{p.pair_id}",
                {"a": p.checklist_item, "b": p.candidate},
                overlap,
                batch,
            )
            for p in store.content.preference_pairs()
        ]

    def units(self, values):
        return {("", "verdict"): values["verdict"]} if "verdict" in values else {}

    def assemble(self, units, labels):
        return {"verdict": units[("", "verdict")]}

    def known_answers(self, store):
        """A pair whose two texts are identical is a gold item with the answer ``same``."""
        return {
            f"toy:{p.pair_id}": {"verdict": "same"}
            for p in store.content.preference_pairs()
            if p.checklist_item == p.candidate
        }

    def default_guidelines(self):
        return "# Same meaning\n\nAnswer *same* when both texts ask for the same thing.\n"


TASK_KIND = register(ToyKind())


# -- its form in the annotation app ----------------------------------------------------------------------
class ToyForm:
    """``render`` / ``edit`` / ``read`` / ``unit_title``, as every kind's form module provides them."""

    CHOICES = ("same", "different")

    def __init__(self, kind):
        self.kind = kind

    @staticmethod
    def render(project, user, item) -> None:
        import streamlit as st
        from prefkit.annotate_app import ui

        st.markdown(f"**A** {item.task.payload['a']}  \n**B** {item.task.payload['b']}")
        row = st.container(horizontal=True)
        for value in ToyForm.CHOICES:
            row.button(
                value,
                key=f"{item.event_id}:{value}",
                type="primary",
                on_click=ui.submit_now,
                args=(user, item, item.event_id, {"verdict": value}),
            )

    @staticmethod
    def edit(project, task, prefix, initial, comment, show_comment=True):
        import streamlit as st

        st.segmented_control(
            "Verdict", list(ToyForm.CHOICES), default=initial.get("verdict"), key=f"{prefix}:verdict"
        )

    @staticmethod
    def read(task, prefix):
        import streamlit as st

        choice = st.session_state.get(f"{prefix}:verdict")
        return ({"verdict": choice}, "") if choice else (None, "Choose a verdict first.")

    @staticmethod
    def unit_title(task, unit, field) -> str:
        return field


# -- its Label Studio config ------------------------------------------------------------------------------
class ToyConfig:
    """One choice per field: the choices come from the kind's ``fields``, and a comment. Made with the
    kind when the bridge first needs it, so importing this module imports no part of the bridge."""

    def __new__(cls, kind):
        from prefkit.annotate_app.labelstudio import config as ls

        class Config(ls.LSConfig):
            controls = {"verdict", "comment"}

            def xml(self):
                choices = "".join(ls.tag("Choice", value=c) for c in self.kind.field("verdict").choices or ())
                shown = ls.tag("Text", name="a", value="$a") + ls.tag("Text", name="b", value="$b")
                verdict = ls.tag("Choices", choices, name="verdict", toName="b", choice="single-radio")
                return ls.tag("View", shown + ls.tag("Header", value="Same?") + verdict + ls.comment_xml("b"))

            def data(self, task):
                return {"a": task.payload["a"], "b": task.payload["b"]}

            def raw_values(self, results, task):
                grouped = ls.by_control(results, self.controls)
                allowed = set(self.kind.field("verdict").choices or ())
                return {
                    "verdict": ls.one_choice(grouped, "verdict", allowed),
                    "comment": ls.text(grouped, "comment"),
                }

            def results(self, values, task):
                out = [ls.choice_result("verdict", "b", values["verdict"])]
                return out + (
                    [ls.text_result("comment", "b", values["comment"])] if values.get("comment") else []
                )

        return Config(kind)
