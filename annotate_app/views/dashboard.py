"""Maintainer dashboard: progress, throughput, label distributions, agreement with intervals, gold."""

import altair as alt
import pandas as pd
import streamlit as st

from annotate_app import ui
from curation import dashboard

ui.require("maintainer")
store = ui.project().store
st.title("Dashboard")

head = dashboard.overview(store)
c = st.columns(4)
c[0].metric("Tasks", head["tasks"])
c[1].metric("Complete (k labels)", head["complete"])
c[2].metric("Labels", head["labels"])
c[3].metric("Annotators", head["annotators"])

st.subheader("Progress per annotator and task kind")
prog = pd.DataFrame(dashboard.progress(store))
if prog.empty:
    st.info("No assignments yet: annotators get items when they open the Annotate page.")
else:
    st.dataframe(prog, hide_index=True, width="stretch")
    st.bar_chart(prog, x="annotator", y="done", color="task_kind", horizontal=True)

left, right = st.columns(2)
with left:
    st.subheader("Throughput")
    per = st.segmented_control("Per", ["day", "hour"], default="day", key="tp_per", required=True)
    tp = pd.DataFrame(dashboard.throughput(store, per))
    if tp.empty:
        st.caption("No finished items yet.")
    else:
        st.line_chart(
            tp.pivot_table(index="bucket", columns="annotator", values="n", aggfunc="sum").fillna(0)
        )
with right:
    st.subheader("Label distributions")
    dist = pd.DataFrame(dashboard.label_distribution(store))
    if dist.empty:
        st.caption("No labels yet.")
    else:
        dist["kind · field"] = dist["task_kind"] + " · " + dist["field"]
        st.bar_chart(dist, x="kind · field", y="n", color="value", horizontal=True)

st.subheader("Agreement (Krippendorff's alpha, 95% bootstrap interval)")
agr = pd.DataFrame(dashboard.agreement(store))
if agr.empty or agr["alpha"].isna().all():
    st.caption("Not enough overlapping labels yet.")
else:
    agr["kind · field"] = agr["task_kind"] + " · " + agr["field"]
    base = alt.Chart(agr.dropna(subset=["alpha"]))
    bars = base.mark_errorbar(thickness=2).encode(x=alt.X("ci_low:Q", title="alpha", scale=alt.Scale(domain=[-0.2, 1])),
                                                 x2="ci_high:Q", y=alt.Y("kind · field:N", title=None))  # fmt: skip
    points = base.mark_point(filled=True, size=80).encode(
        x="alpha:Q", y="kind · field:N", tooltip=list(agr.columns)
    )
    rule = alt.Chart(pd.DataFrame({"x": [0.8]})).mark_rule(strokeDash=[4, 4], color="gray").encode(x="x:Q")
    st.altair_chart(bars + points + rule, width="stretch")
    st.dataframe(agr.drop(columns=["kind · field"]), hide_index=True, width="stretch")

left, right = st.columns(2)
with left:
    st.subheader("Gold accuracy per annotator")
    gold = pd.DataFrame(head["gold"])
    if gold.empty:
        st.caption("No gold items labelled yet (`prefkit tasks gold import FILE`).")
    else:
        st.dataframe(gold, hide_index=True, width="stretch")
with right:
    st.subheader("Annotator quality")
    quality = pd.DataFrame(dashboard.annotator_quality(store))
    if quality.empty:
        st.caption("No labels yet.")
    else:
        st.dataframe(quality, hide_index=True, width="stretch")

with st.expander("Flagged items and sessions to re-verify"):
    st.dataframe(pd.DataFrame(dashboard.flagged(store)), hide_index=True, width="stretch")
    st.dataframe(pd.DataFrame(dashboard.reverification(store)), hide_index=True, width="stretch")

with st.expander("Batches"):
    st.dataframe(pd.DataFrame(store.task_summaries()), hide_index=True, width="stretch")
    batches = [b["batch_id"] for b in store.batches()]
    if batches:
        b1, b2, b3 = st.columns([2, 1, 1])
        chosen = b1.selectbox("Batch", batches, key="batch_pick")
        if b2.button("Open", key="batch_open"):
            store.set_batch_status(chosen, "open")
            st.rerun()
        if b3.button("Close", key="batch_close"):
            store.set_batch_status(chosen, "closed")
            st.rerun()
        st.dataframe(pd.DataFrame(store.batches()), hide_index=True, width="stretch")
