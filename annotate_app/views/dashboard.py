"""Maintainer dashboard: progress, throughput, label distributions, agreement with intervals, gold."""

import altair as alt
import pandas as pd
import streamlit as st
from prefkit.annotate_app import ui
from prefkit.curation.quality import dashboard

LEGEND = alt.Legend(orient="right", labelLimit=0, titleLimit=0)  # never cut: no label limit

ui.require("maintainer")
store = ui.open_project().store
st.title("Dashboard")

head = dashboard.overview(store)
c = st.columns(4)
c[0].metric("Tasks", head["tasks"])
c[1].metric("Complete (k labels)", head["complete"])
c[2].metric("Labels", head["labels"])
c[3].metric("Annotators", head["annotators"], help="people with at least one label")

st.subheader("Progress per annotator and task kind")
prog = pd.DataFrame(dashboard.progress(store))
if prog.empty:
    st.info("No assignments yet: annotators get items when they open the Annotate page.")
else:
    st.dataframe(prog, hide_index=True, width="stretch")
    chart = (
        alt.Chart(prog)
        .mark_bar()
        .encode(
            x=alt.X("done:Q", title="items done"),
            y=alt.Y("annotator:N", title=None, axis=alt.Axis(labelLimit=0)),
            color=alt.Color("task_kind:N", title="task kind", legend=LEGEND),
            tooltip=list(prog.columns),
        )
    )
    st.altair_chart(chart.properties(height=40 * prog["annotator"].nunique() + 40), width="stretch")

left, right = st.columns(2)
with left:
    st.subheader("Throughput")
    per = st.segmented_control("Per", ["day", "hour"], default="day", key="tp_per", required=True)
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
    st.subheader("Label distributions")
    dist = pd.DataFrame(dashboard.label_distribution(store))
    if dist.empty:
        st.caption("No labels yet.")
    else:
        dist["kind · field"] = dist["task_kind"] + " · " + dist["field"]
        chart = (
            alt.Chart(dist)
            .mark_bar()
            .encode(
                x=alt.X("n:Q", title="labels"),
                y=alt.Y("kind · field:N", title=None, axis=alt.Axis(labelLimit=0)),
                color=alt.Color("value:N", legend=LEGEND),
                tooltip=["task_kind", "field", "value", "n"],
            )
        )
        st.altair_chart(chart, width="stretch")

st.subheader("Agreement (Krippendorff's alpha, 95% bootstrap interval)")
policy = ui.open_project().config.release
agr = pd.DataFrame(dashboard.agreement(store, policy))
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
    st.dataframe(agr.drop(columns=["kind · field"]), hide_index=True, width="stretch")

st.subheader("Gold accuracy per annotator")
gold = pd.DataFrame(head["gold"])
if gold.empty:
    st.caption("No gold items labelled yet (`prefkit tasks gold import FILE`).")
else:
    st.dataframe(gold, hide_index=True, width="stretch")
st.subheader("Annotator quality")  # full width: its columns never clip
quality = pd.DataFrame(dashboard.annotator_quality(store, gold_min=policy.gold_accuracy_min))
if quality.empty:
    st.caption("No labels yet.")
else:
    st.dataframe(quality, hide_index=True, width="stretch")
    with st.expander("Confusion matrices (P(the annotator says each value | the true value))"):
        st.dataframe(pd.DataFrame(dashboard.confusion_matrices(store)), hide_index=True, width="stretch")

st.subheader("Cost per verified unit")
costs = dashboard.cost(store, ui.open_project().config.annotation)
st.caption(
    f"LLM US$ {costs.totals['cost_usd']:.4f} for {costs.totals['tokens']:,} tokens; annotator time "
    f"{costs.totals['minutes']:.1f} minutes over {costs.totals['items']} finished items (one item counts at "
    f"most {costs.time_cap_s:g} s); the same numbers as `prefkit cost` and the dataset card."
)
st.dataframe(pd.DataFrame(costs.verified), hide_index=True, width="stretch")
c1, c2 = st.columns(2)
c1.dataframe(pd.DataFrame(costs.stages), hide_index=True, width="stretch")
c2.dataframe(pd.DataFrame(costs.times), hide_index=True, width="stretch")
st.caption(f"Forecast at the pace of the last {costs.pace_days:g} days of labelling")
st.dataframe(pd.DataFrame(costs.forecast), hide_index=True, width="stretch")

with st.expander("Flagged items and sessions to re-verify"):
    st.dataframe(pd.DataFrame(dashboard.flagged(store)), hide_index=True, width="stretch")
    st.dataframe(pd.DataFrame(dashboard.reverification(store)), hide_index=True, width="stretch")

with st.expander("Batches"):
    st.dataframe(pd.DataFrame(store.queues.task_summaries()), hide_index=True, width="stretch")
    batches = [b.batch_id for b in store.labels.batches()]
    if batches:
        b1, b2, b3 = st.columns([2, 1, 1])
        chosen = b1.selectbox("Batch", batches, key="batch_pick")
        if b2.button("Open", key="batch_open"):
            store.labels.set_batch_status(chosen, "open")
            st.rerun()
        if b3.button("Close", key="batch_close"):
            store.labels.set_batch_status(chosen, "closed")
            st.rerun()
        st.dataframe(pd.DataFrame(store.labels.batches()), hide_index=True, width="stretch")
