"""Maintainer dashboard: progress, throughput, label distributions, agreement with intervals, gold,
and what suggestions do (assisted vs control arm).

The page maintainers land on. Tables show readable column names, task kinds by their titles and
``–`` for a number that is undefined; a flagged item opens on the Item page.
"""

import altair as alt
import pandas as pd
import streamlit as st
from prefkit.annotate_app import console, ui
from prefkit.annotate_app.forms.text import named
from prefkit.annotate_app.safe_text import md_escape
from prefkit.curation.annotation import work
from prefkit.curation.quality import dashboard
from prefkit.curation.quality.agreement import agreement_timeline
from prefkit.curation.quality.cost import ENOUGH_PACE
from prefkit.curation.quality.suggestions import assist_report, difference_lines, report_rows

# Under the chart, every category (no symbol limit), never cut (no label limit).
LEGEND = alt.Legend(orient="bottom", columns=2, labelLimit=0, titleLimit=0, symbolLimit=0)
#: Column names as a maintainer reads them (the records' field names are for code and JSON).
COLUMNS = {
    "kind": "task kind",
    "unit": "verified unit",
    "count": "verified",
    "stages": "LLM stages",
    "cost_usd": "US$",
    "usd_per_unit": "US$ per unit",
    "minutes": "annotator minutes",
    "minutes_per_unit": "minutes per unit",
    "stage": "LLM stage",
    "prompt_tokens": "prompt tokens",
    "completion_tokens": "completion tokens",
    "items": "items finished",
    "median_s": "median s per item",
    "batch_id": "batch",
    "remaining_labels": "labels still needed",
    "labels_per_day": "labels per day",
    "days_left": "days left",
}


def human(records) -> pd.DataFrame:
    """Records as a table a person reads: human column names, kind titles, "–" for nothing (never None)."""
    table = pd.DataFrame(records)
    if "kind" in table:
        table["kind"] = table["kind"].map(lambda k: dashboard.kind_title(str(k)) if k else "–")
    if "stages" in table:
        table["stages"] = table["stages"].map(lambda g: ", ".join(g) or "–")
    for col in [c for c in table.columns if table[c].isna().any()]:  # one type per column: text
        table[col] = table[col].map(
            lambda v: "–" if pd.isna(v) else (f"{v:g}" if isinstance(v, float) else str(v))
        )
    return table.rename(columns=COLUMNS)


me = ui.require("maintainer").username
store = ui.open_project().store
st.title("Dashboard")

head = dashboard.overview(store)
c = st.columns(4)
c[0].metric("Tasks", head["tasks"])
c[1].metric("Complete tasks", head["complete"], help=work.COMPLETE)
c[2].metric("Labels", head["labels"])
c[3].metric("Annotators", head["annotators"], help="people with at least one label")
if head["beyond_overlap"]:
    st.warning(
        f"{len(head['beyond_overlap'])} item(s) beyond overlap, with more labels than their overlap (from "
        "Label Studio or a label file); the labels are kept and counted: "
        + md_escape("; ".join(head["beyond_overlap"][:5]))
    )

st.header("Progress per annotator and task kind")
rows = dashboard.progress(store)
if not rows:
    st.info("No assignments yet: annotators get items when they open the Annotate page.")
else:
    prog = pd.DataFrame(dashboard.progress_table(rows))
    ui.table(prog)
    prog["items done"] = prog["done"].astype(int)
    chart = (
        alt.Chart(prog)
        .mark_bar()
        .encode(
            x=alt.X("items done:Q", title="items done"),
            y=alt.Y("annotator:N", title=None, axis=alt.Axis(labelLimit=0)),
            color=alt.Color("task kind:N", title="task kind", legend=LEGEND),
            tooltip=["annotator", "task kind", "assigned", "done"],
        )
    )
    # a band per annotator (the y step), not a height the chart is squeezed into: one annotator is a bar
    st.altair_chart(chart.properties(height=alt.Step(32)), width="stretch")

left, right = st.columns(2)
with left:
    st.header("Throughput")
    ui.from_url("tp_per", "per", ("day", "hour"))
    st.session_state.setdefault("tp_per", "day")
    per = st.segmented_control("Per", ["day", "hour"], key="tp_per", required=True) or "day"
    ui.to_url("per", per)
    tp = pd.DataFrame(dashboard.throughput(store, per))
    if tp.empty:
        st.caption("No finished items yet.")
    else:  # bars: one day (or hour) of work is one bar per annotator, not an invisible one-point line
        per_who = tp.groupby(["bucket", "annotator"], as_index=False)["n"].sum()
        chart = (
            alt.Chart(per_who)
            .mark_bar()
            .encode(
                x=alt.X("bucket:O", title=per, axis=alt.Axis(labelAngle=0, labelLimit=0)),
                xOffset="annotator:N",
                y=alt.Y("n:Q", title="items finished"),
                color=alt.Color("annotator:N", legend=LEGEND),
                tooltip=["bucket", "annotator", "n"],
            )
        )
        st.altair_chart(chart, width="stretch")
with right:
    st.header("Label distributions")
    dist = pd.DataFrame(dashboard.label_distribution(store))
    if dist.empty:
        st.caption("No labels yet.")
    for kind in [] if dist.empty else list(dict.fromkeys(dist["task_kind"])):
        # One chart per task kind, each with its own legend: the values of one kind only.
        part = dist[dist["task_kind"] == kind]
        chart = (
            alt.Chart(part, title=dashboard.kind_title(str(kind)))
            .mark_bar()
            .encode(
                x=alt.X("n:Q", title="labels"),
                y=alt.Y("field:N", title=None, axis=alt.Axis(labelLimit=0)),
                color=alt.Color("value:N", legend=LEGEND),
                tooltip=["field", "value", "n"],
            )
        )
        st.altair_chart(chart.properties(height=alt.Step(32)), width="stretch")

st.header("Agreement (Krippendorff's alpha, 95% bootstrap interval)")
policy = ui.open_project().config.release
dashboard_rows = dashboard.agreement(store, policy)
agr = pd.DataFrame(dashboard_rows)
if agr.empty or agr["alpha"].isna().all():
    st.caption("Not enough overlapping labels yet.")
else:
    agr["kind · field"] = agr["task_kind"] + " · " + agr["field"]
    shown = agr.dropna(subset=["alpha"])
    # The axis reaches every alpha and interval end (alpha can be far below 0), never cutting one off.
    low = min(-0.2, float(shown[["alpha", "ci_low"]].min().min()) - 0.05)
    x = alt.X("ci_low:Q", title="alpha", scale=alt.Scale(domain=[low, 1], nice=False))
    y = alt.Y("kind · field:N", title=None, axis=alt.Axis(labelLimit=0))
    base = alt.Chart(shown)
    bars = base.mark_errorbar(thickness=2).encode(x=x, x2="ci_high:Q", y=y)
    points = base.mark_point(filled=True, size=80).encode(x="alpha:Q", y=y, tooltip=list(agr.columns))
    # Each field's threshold under [release] alpha_min (one number, or per "kind.field").
    rule = base.mark_tick(color="gray", thickness=2, size=24).encode(x="alpha_min:Q", y=y)
    chart = (bars + points + rule).properties(
        height=max(120, 40 * len(shown)), padding={"left": 10, "right": 20}
    )
    st.altair_chart(chart, width="stretch")
    ui.table(pd.DataFrame(dashboard.agreement_table(dashboard_rows)))
    st.caption(
        "alpha and its interval: " + str(agr["ci_method"].iloc[0]) + "; AC1: Gwet's; agreement: the share "
        "of pairs of labels of one unit that agree; needed: [release] alpha_min."
    )

st.subheader("Agreement over time")
timeline = pd.DataFrame(agreement_timeline(store))
if timeline.empty or timeline["alpha"].isna().all():
    st.caption("Not enough overlapping labels on any one day yet.")
else:
    timeline = timeline.dropna(subset=["alpha"])
    timeline["kind · field"] = timeline["task_kind"] + " · " + timeline["field"]
    color = alt.Color("kind · field:N", legend=LEGEND)
    line = (
        alt.Chart(timeline).mark_line(point=True).encode(x="day:T", y="alpha:Q", color=color, tooltip="day")
    )
    # Each guidelines version from its first label on: did a clarification change agreement?
    firsts = [
        (v.first_used_at[:10], f"{v.kind} {v.version or 'none'}")
        for v in store.guidelines.versions()
        if v.first_used_at
    ]
    rules = alt.Chart(pd.DataFrame(firsts, columns=["day", "version"])).mark_rule(
        strokeDash=[4, 3], color="gray"
    )
    st.altair_chart(line + rules.encode(x="day:T", tooltip="version"), width="stretch")
    st.caption(
        "alpha over the units whose last label came that day; dashed lines: a guidelines version's "
        "first label (hover for kind and version; `prefkit guidelines list`)."
    )

st.header("Gold accuracy per annotator")
gold = pd.DataFrame(
    [
        {
            "annotator": g["annotator"],
            "task kind": dashboard.kind_title(g["task_kind"]),
            "gold items": g["n_gold"],
            "accuracy": f"{g['accuracy']:.0%}",
        }
        for g in head["gold"]
    ]
)
if gold.empty:
    st.caption("No gold items labelled yet (`prefkit tasks gold import FILE`).")
else:
    ui.table(gold)
st.header("Annotator quality")  # full width: its columns never clip
fast = ui.open_project().config.annotation.fast_item_s
quality = dashboard.quality_table(dashboard.annotator_quality(store, fast_s=fast, policy=policy))
if not quality:
    st.caption("No labels yet.")
else:
    ui.table(pd.DataFrame(quality), column_config={"why": st.column_config.TextColumn(width="large")})
    st.caption(
        f"An outlier: gold accuracy under {policy.gold_accuracy_min:.0%}, agreement far below the others', "
        f"under {fast:g} s per item ([annotation] fast_item_s) or a quarter of the others' time, one "
        f"value for every label, or self-consistency α with their own repeats under {policy.self_alpha_min:g} "
        "([release] self_alpha_min; a flag, not a gate)."
    )
    with st.expander("Confusion matrices (P(the annotator says each value | the true value))"):
        ui.table(pd.DataFrame(dashboard.confusion_matrices(store)))

st.header("Cost per verified unit")
costs = dashboard.cost(store, ui.open_project().config.annotation)
st.caption(
    f"LLM US$ {costs.totals['cost_usd']:.4f} for {costs.totals['tokens']:,} tokens; annotator time "
    f"{costs.totals['minutes']:.1f} minutes over {costs.totals['items']} finished items (one item counts at "
    f"most {costs.time_cap_s:g} s); the same numbers as `prefkit cost` and the dataset card."
)
ui.table(human(costs.verified))
ui.table(human(costs.stages))
ui.table(human(costs.times))
st.subheader("Forecast")
enough_items, enough_days = ENOUGH_PACE
paced = {k: (n, days) for k, (n, days) in costs.paced.items() if n >= enough_items and days >= enough_days}
if not paced:
    had = "; ".join(
        f"{dashboard.kind_title(k)}: {n} items over {days * 24:.1f} h" for k, (n, days) in costs.paced.items()
    )
    st.caption(
        f"No forecast yet: a pace needs at least {enough_items} finished items over {enough_days:g} day "
        f"of labelling{' (so far ' + had + ')' if had else ''}."
    )
else:
    st.caption(
        f"At each kind's pace over the {costs.pace_days:g} days up to {console.when(costs.paced_until)} UTC "
        "([annotation] pace_days): "
        + "; ".join(
            f"{dashboard.kind_title(k)} {n} items over {days:.1f} days" for k, (n, days) in paced.items()
        )
        + ". Kinds with less history than that show no forecast."
    )
    ui.table(human([f for f in costs.forecast if f.kind in paced]))

st.header("Suggestions: assisted vs control arm")  # docs/assist.md
arms = assist_report(store, n_boot=500)
if not arms.kinds:
    st.caption("No label was made on an item with a suggestion (`prefkit suggest`).")
else:
    ui.table(pd.DataFrame(report_rows(arms)))
    st.caption("  \n".join(md_escape(line) for line in difference_lines(arms)))

flags = dashboard.flagged(store)
st.header(f"Flagged items ({len(flags)})")
if not flags:
    st.caption("No item was reported as broken.")
else:
    tasks = {f.task_id: store.labels.task(f.task_id) for f in flags}
    flag_rows = pd.DataFrame(
        [
            {
                "task kind": dashboard.kind_title(f.kind),
                "item": named(tasks[f.task_id]),
                "reason": f.comment or "",
                "by": f.annotator,
                "when": f.created_at[:16].replace("T", " "),
            }
            for f in flags
        ]
    )

    def _open_flagged() -> None:
        chosen = st.session_state["flag_table"].selection.rows
        if chosen:
            st.session_state["_open_item"] = flags[chosen[0]].task_id

    st.caption("Pick a row to open the item.")
    ui.table(
        flag_rows,
        key="flag_table",
        on_select=_open_flagged,
        selection_mode="single-row",
        column_config={"item": st.column_config.TextColumn(width="large")},
    )
    if st.session_state.get("_open_item"):
        st.switch_page("views/item.py", query_params={"task": st.session_state.pop("_open_item")})
with st.expander("Sessions to re-verify"):
    ui.table(human(dashboard.reverification(store)))

with st.expander("Batches"):
    ui.table(human(work.task_list(ui.open_project())))
    st.caption(work.COMPLETE)
    listed = work.batch_list(ui.open_project())
    batches = [b["batch_id"] for b in listed]
    if batches:
        b1, b2, b3 = st.columns([2, 1, 1])
        chosen = b1.selectbox("Batch", batches, key="batch_pick")
        if b2.button("Open", key="batch_open"):  # the Work page's call: audited as that maintainer's
            work.set_batch_status(ui.open_project(), me, chosen, "open")
            ui.rerun()
        if b3.button("Close", key="batch_close"):
            work.set_batch_status(ui.open_project(), me, chosen, "closed")
            ui.rerun()
        ui.table(human(listed))
