"""Release (maintainers only): ``prefkit release check`` live — each gate, its figure, its threshold,
why it fails and a link to what to fix — then cutting a version (a confirmation step; an override
reason when a gate fails, recorded in the manifest), and ``release verify`` and ``release diff``
against the previous version, as tables.

Every action is one call into :mod:`prefkit.exports.release` (what the commands call); a cut is an
audited event, refused in the library's words (a failing gate without a reason, an existing version,
a version bump smaller than the change).
"""

import pandas as pd
import streamlit as st
from prefkit.annotate_app import console, errors, ui
from prefkit.annotate_app.safe_text import md_escape
from prefkit.curation.quality.gates import SHOWN_CULPRITS
from prefkit.exports.release import (
    cut_release,
    diff_releases,
    parse_version,
    plan_and_check,
    previous_version,
    releases,
    verify_in_project,
)
from prefkit.schemas.common import PrefkitError

me = ui.require("maintainer").username
project = ui.open_project()
st.title("Release")

#: Where each gate's failure is fixed: a page of this app and what to do there.
FIX = {
    "alpha": ("views/adjudicate.py", "Adjudicate the disagreements"),
    "adjudicated": ("views/adjudicate.py", "Open the adjudication queue"),
    "flags": ("views/dashboard.py", "See the flagged items (Dashboard)"),
    "gold_accuracy": ("views/dashboard.py", "See each annotator's gold accuracy (Dashboard)"),
    "min_labels": ("views/work.py", "See the work still open (Work)"),
    "assist_anchoring": ("views/dashboard.py", "See the suggestion arms (Dashboard)"),
}

with st.spinner("Running the release gates…"):
    planned, results = plan_and_check(project)
failing = [r for r in results if not r.passed]
st.subheader("Gates" + (f": {len(failing)} failing" if failing else ": every gate passes"))
ui.table(
    pd.DataFrame(
        [
            {
                "gate": r.gate,
                "result": "pass" if r.passed else "FAIL",
                "figure": "–" if r.value is None else str(r.value),
                "threshold": "–" if r.threshold is None else str(r.threshold),
                "why": r.summary,
            }
            for r in results
        ]
    ),
    column_config={"why": st.column_config.TextColumn(width="large")},
)
if failing:
    st.markdown("**What to fix**")
for r in failing:  # each failing gate: why, what fails it (in full lines, never cut off) and where to fix it
    with st.container(border=True):
        st.markdown(ui.safe("**{}** · {}", r.gate, r.summary))
        if r.gate in FIX:
            page, label = FIX[r.gate]
            st.page_link(page, label=label)
        culprits = r.culprits[:SHOWN_CULPRITS]
        more = len(r.culprits) - len(culprits)
        st.caption(
            "  \n".join(md_escape(c) for c in culprits) + (f"  \n… and {more} more" if more > 0 else "")
        )
with st.expander("Configs of the release, their rows and the gates that apply to each"):
    ui.table(
        pd.DataFrame(
            [
                {
                    "config": c.name,
                    "rows": c.count,
                    "dropped": sum(c.dropped.values()),
                    "why dropped": "; ".join(f"{n} {why}" for why, n in sorted(c.dropped.items())),
                    "gates": ", ".join(r.gate for r in results if c.name in r.applies_to),
                }
                for c in planned
            ]
        )
    )
st.caption("The same gates as `prefkit release check`, computed now from the project's labels.")

st.subheader("Cut a version")


def _next_version() -> str:
    """The version the form offers: 1.0.0 first, then the next minor after the latest release."""
    found = releases(project.releases_dir)
    return "1.0.0" if not found else f"{parse_version(found[-1])[0]}.{parse_version(found[-1])[1] + 1}.0"


found = releases(project.releases_dir)
latest = found[-1] if found else None


def _cut() -> None:
    """*Cut release* (a callback: it runs before the form is drawn again). After a cut the form is
    empty again (no tick, no override reason carried into the next manifest) and the version is the
    next one; a refusal keeps what was typed and says why under the form."""
    version = (st.session_state.get("release_version") or "").strip()
    if not st.session_state.get("release_sure"):
        st.session_state["release_refused"] = "Not cut: tick the confirmation first"
        return
    override = (st.session_state.get("release_override") or "").strip() or None
    try:
        result = cut_release(project, version, override=override, actor=me)
    except PrefkitError as exc:
        st.session_state["release_refused"] = ui.safe("Not cut: {}", str(exc).splitlines()[0])
        st.session_state["release_sure"] = False  # a confirmation is for one attempt
        return
    # set, not dropped: the browser shows a value the server sets, and would send back one it kept
    st.session_state.update(release_version=_next_version(), release_override="", release_sure=False)
    st.session_state["release_shown"] = version  # verify and compare the new one
    ui.flash(
        f"Released {version}: data sha256 {result.data_sha256[:16]}"
        + (" (gates overridden)" if result.manifest.override_reason else "")
    )


with st.form("release_cut", border=False):
    c1, c2 = st.columns([1, 3])
    st.session_state.setdefault("release_version", _next_version())
    c1.text_input("Version (X.Y.Z)", key="release_version")
    c2.text_input(
        "Override reason (needed while a gate fails; written into the manifest)",
        key="release_override",
        disabled=not failing,
    )
    st.checkbox("I have read the gates above and want to cut this version now", key="release_sure")
    st.caption(f"Latest release: {latest or 'none yet'}. A cut is never overwritten or re-cut.")
    st.form_submit_button("Cut release", type="primary", on_click=_cut)
if refused := st.session_state.pop("release_refused", None):
    st.error(refused)


@st.fragment
@errors.guarded  # a rerun of the fragment alone: an unexpected error is one line with an id, too
def _verify_and_compare(versions: list[str]) -> None:
    """The picked release verified and diffed against the one before it; picking another reruns
    this part alone (the gates above are not computed again)."""
    ui.run_mark()  # a run of the fragment alone is counted too (the keys wait for it)
    ui.from_url("release_shown", "version", versions)
    shown = st.selectbox("Verify and compare", versions, key="release_shown")
    ui.to_url("version", shown)
    where = project.releases_dir / shown
    check = verify_in_project(where, project)
    st.markdown(f"**Verify {shown}**: " + ("intact" if check.ok else f"{len(check.problems)} problem(s)"))
    ui.table(
        pd.DataFrame(
            [{"result": "FAIL", "check": p} for p in check.problems]
            + [{"result": "OK", "check": f"{check.files} files match the manifest"}] * (not check.problems)
            + [{"result": "OK", "check": f"manifest.json matches {t}"} for t in check.trusted]
        ),
        column_config={"check": st.column_config.TextColumn(width="large")},
    )
    before = previous_version(project, shown)
    if before is None:
        st.caption(f"{shown} is the first release: nothing to compare it with.")
    else:
        d = diff_releases(project.releases_dir / before, where)
        st.markdown(f"**Changes from {before} to {shown}**: a {d['level']} change")
        if d["configs"]:
            ui.table(pd.DataFrame([{"config": k, **v} for k, v in d["configs"].items()]))
        else:
            st.caption("The data files are identical (metadata only).")
    st.caption("The same checks as `prefkit release verify` and `prefkit release diff`.")


st.subheader("Releases")
if not found:
    st.caption("No release yet.")
else:
    recorded = {r.version: r for r in project.store.releases.recorded()}
    ui.table(
        pd.DataFrame(
            [
                {
                    "version": v,
                    "cut": console.when(recorded[v].created_at) if v in recorded else "–",
                    "data sha256": recorded[v].data_sha256[:16] if v in recorded else "–",
                    "gates": ("pass" if recorded[v].gates_passed else "overridden") if v in recorded else "–",
                    "override reason": (recorded[v].override_reason or "") if v in recorded else "",
                }
                for v in reversed(found)
            ]
        )
    )
    _verify_and_compare(list(reversed(found)))

console.audit_table(project.store, ("release",))
