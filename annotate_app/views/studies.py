"""Studies (maintainers only): the crowd studies with how their participants stand, a study's review
(``prefkit crowd report``) with the files the platform's bulk approve and bulk bonus take, and what
``prefkit crowd study create`` and ``new-link`` do (the entry URL shown once).

Each change is one call into :mod:`prefkit.curation.annotation.studies` (what the commands call), an
audited event, and refused in the library's words.
"""

from collections import Counter
from urllib.parse import urlsplit

import pandas as pd
import streamlit as st
from prefkit.annotate_app import console, ui
from prefkit.curation.annotation import studies
from prefkit.curation.quality.study_report import platform_files, study_report

me = ui.require("maintainer").username
project = ui.open_project()
store = project.store
st.title("Studies")

made = st.session_state.pop("_study_url", None)  # (study, URL, where): this run shows it, no other
#: The address this maintainer uses (the app's, without the page): what participants reach too, unless
#: the maintainer types another (a public host name in front of the app).
_here = urlsplit(st.context.url or "http://localhost:8501")
HERE = f"{_here.scheme}://{_here.netloc}" + ("/" + st.get_option("server.baseUrlPath").strip("/")).rstrip("/")


def _made(where: str) -> bool:
    """A new entry URL, shown where the form that made it was, with a button that opens it."""
    if not made or made[2] != where:
        return False
    with st.container(border=True):
        st.success(
            ui.safe(
                "The entry URL of **{}**, shown only this once: paste it into the platform as "
                "the study's URL (the project keeps only a hash of its secret).",
                made[0],
            )
        )
        st.code(made[1], language=None)
        st.link_button("Open the entry URL", made[1], icon=":material/open_in_new:")
    return True


found = store.studies.studies()
if not found:
    st.info("No study yet: create one below (or `prefkit crowd study create`). See docs/crowd.md.")
else:
    rows = []
    for s in found:
        counts = Counter(p.status for p in store.studies.participants(s.study_id))
        rows.append(
            {
                "study": s.study_id,
                "task kind": ui.KIND_TITLES.get(s.kind, s.kind),
                "batch": s.batch_id,
                "items": s.items,
                "gold share": s.gold_share,
                "screened out below": s.screen_below,
                "time limit (min)": s.time_limit_minutes,
                "working": counts["active"],
                "completed": counts["completed"],
                "screened out": counts["screened_out"],
                "timed out": counts["timed_out"],
            }
        )
    ui.table(pd.DataFrame(rows))


def _review(study_id: str) -> None:
    report = study_report(project, study_id)
    if not report.participants:
        st.caption("Nobody has arrived yet.")
    else:
        st.dataframe(
            pd.DataFrame(
                [
                    {
                        "participant": r.platform_id,
                        "decision": r.decision,
                        "reason": r.reason,
                        "status": r.status,
                        "items": r.items,
                        "minutes": r.minutes,
                        "median s": r.median_s,
                        "attention checks": "–"
                        if r.gold_accuracy is None
                        else f"{r.gold_accuracy:.0%} of {r.gold_n}",
                        "reliability": r.reliability,
                        "agreed": r.agreed,
                        "self-consistency α": r.self_alpha,
                        "bonus": r.bonus,
                        "flag": r.self_flag or "",
                    }
                    for r in report.participants
                ]
            ),
            hide_index=True,
            width="stretch",  # the decision and its reason first: in view at 800 px
            column_config={
                "participant": st.column_config.TextColumn(width="small", pinned=True),
                "reason": st.column_config.TextColumn(width="large"),
            },
        )
    t, cur = report.totals, report.currency
    per = "–" if t["cost_per_verified_item"] is None else f"{cur} {t['cost_per_verified_item']:.4f}"
    st.caption(
        f"Suggested: approve {t['approve']}, reject {t['reject']}. Cost {cur} {t['cost']:.2f} (rewards "
        f"{t['rewards']:.2f} + bonuses {t['bonuses']:.2f}) over {t['verified_items']} verified item(s): "
        f"{per} each. Suggestions only: check them before uploading the files."
    )
    cols = st.columns(3)
    for col, (name, text) in zip(cols, platform_files(report).items(), strict=True):
        col.download_button(
            name,
            text,
            file_name=f"{study_id}-{name}",
            key=f"study_file_{name}",
            mime="text/csv" if name.endswith(".csv") else "text/plain",
        )


if found:
    st.subheader("Review")
    ids = [s.study_id for s in found]
    ui.from_url("study_review", "review", ids)  # not "study": that names a participant's entry link
    chosen = st.selectbox("Study", ids, key="study_review")
    ui.to_url("review", chosen)
    if chosen:
        _review(chosen)
        st.session_state.setdefault("study_link_base", HERE)
        base = st.text_input("Base URL for a new link", key="study_link_base")
        if st.button("New entry link (the old one stops working)", key="study_new_link"):

            def _link() -> str:
                url = studies.new_link(project, chosen, base, actor=me)
                st.session_state["_study_url"] = (chosen, url, "link")
                return url

            console.act(_link, lambda _: f"New entry link for {chosen}")
        _made("link")


def _create_form() -> None:
    with st.form("study_create", border=False):
        c1, c2, c3 = st.columns(3)
        study_id = c1.text_input("Study id (a-z, 0-9, _ and -)", key="study_create_id")
        name = st.text_input(
            "Title participants see (default: the task kind's title)", key="study_create_name"
        )
        kind = c2.selectbox(
            "Task kind",
            list(ui.KIND_TITLES),
            format_func=lambda k: ui.KIND_TITLES[k],
            key="study_create_kind",
        )
        batch = c3.text_input("Batch", value="default", key="study_create_batch")
        items = c1.number_input(
            "Items per participant", min_value=1, max_value=1000, value=20, key="study_create_items"
        )
        gold = c2.number_input(
            "Gold share (attention checks)",
            min_value=0.0,
            max_value=0.95,
            value=0.2,
            step=0.05,
            key="study_create_gold",
        )
        below = c3.number_input(
            "Screened out below (gold accuracy)",
            min_value=0.0,
            max_value=1.0,
            value=0.5,
            step=0.05,
            key="study_create_below",
        )
        done_code = c1.text_input("Completion code", key="study_create_code")
        out_code = c2.text_input("Screened-out code", key="study_create_out")
        limit = c3.number_input("Time limit (minutes)", min_value=1.0, value=60.0, key="study_create_limit")
        reward = c1.number_input(
            "Reward per approved submission", min_value=0.0, value=0.0, step=0.25, key="study_create_reward"
        )
        bonus = c2.number_input(
            "Bonus per agreed item", min_value=0.0, value=0.0, step=0.01, key="study_create_bonus"
        )
        scale = c3.selectbox("Bonus scale", ["reliability", "flat"], key="study_create_scale")
        places = c1.number_input("Places (0: no limit)", min_value=0, value=0, key="study_create_places")
        fast = c2.number_input(
            "Stated minimum seconds per item (optional)",
            min_value=0.0,
            value=None,
            step=1.0,
            key="study_create_fast",
            help="Shown on the participants' first page; only then a reason to reject. "
            "Without it, speed counts only as a statistical outlier of the study.",
        )
        st.session_state.setdefault("study_create_base", HERE)
        base = st.text_input("Base URL (where participants reach this app)", key="study_create_base")
        if st.form_submit_button("Create study", type="primary"):
            rules = studies.Rules(
                reward=reward,
                bonus_per_item=bonus,
                bonus_scale=scale,
                places=int(places),
                too_fast_s=fast or None,
            )

            def _create() -> studies.CreatedStudy:
                created = studies.create_study(
                    project,
                    study_id.strip(),
                    kind=kind,
                    batch=batch.strip(),
                    items=int(items),
                    gold_share=gold,
                    screen_below=below,
                    completion_code=done_code.strip(),
                    screened_out_code=out_code.strip(),
                    time_limit_minutes=limit,
                    base_url=base.strip(),
                    rules=rules,
                    name=name.strip() or None,
                    actor=me,
                )
                st.session_state["_study_url"] = (created.study.study_id, created.entry_url, "create")
                return created

            console.act(_create, lambda c: f"Created study {c.study.study_id}", refused="Not created")


st.subheader("New study")
if not _made("create"):  # the new study's URL where its form was; the form again on the next run
    _create_form()
elif st.button("Create another study", key="study_create_again"):
    ui.rerun()
console.audit_table(store, ("study",))
