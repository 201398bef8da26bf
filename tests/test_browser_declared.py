"""A declared kind with every question type, labelled by three annotators in the real browser (keys
and mouse): the form drawn from the declaration, its draft kept over a reload, and the labels giving
the decisions and agreement worked out by hand in tests/test_declared_kinds.py. Then the journey's
end: a label file for more items and a built-in kind, a cut, and every config read by ``load_dataset``
with the types and the values that were labelled."""

from __future__ import annotations

import json
import re

import pytest
from appkit import PASSWORD, draft_kept, item_now, next_item, open_kind, seed_pairs, serve, settle, sign_in
from declaredkind import ANSWERS, DECIDED, ITEMS, NAME, TOML, declared_project, label_rows, write_items
from prefkit.curation.annotation import work
from prefkit.curation.annotation.labels_io import import_labels
from prefkit.curation.quality.agreement import agreement_rows
from prefkit.curation.quality.consensus import adjudicate, final_labels

pytestmark = [pytest.mark.browser, pytest.mark.slow]
TITLE = "Which response follows the user better?"
BETTER = "Which response follows the user's preferences better? (keys 1, 2, 3)"
#: The kind with the sixth question type too: an optional span question over the response.
SPAN = '[[questions]]\nname = "marks"\ntype = "span"\nfield = "response_a"\nlabels = ["pref", "bad"]\nrequired = false\n'


def _meta(n: int) -> dict:
    return {"question_type": "temporal" if n % 2 else "multi-hop", "session_dates": [f"2024-0{n}-01"]}


def _items(*ns: int) -> list[dict]:
    return [{**ITEMS[n % 2], "id": f"i{n}", "meta": _meta(n)} for n in ns]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("declared") / "proj"
    project = declared_project(root, "declared", toml=TOML + SPAN, items=_items(1, 2))
    seed_pairs(project, 2)  # a built-in kind beside the declared one
    assert work.create(project, "p", "preference_match", overlap="3") == 2
    for who in ANSWERS:
        project.store.accounts.add_user(who, "annotator", PASSWORD)
    yield from serve(project)


def _answer(page, values: dict, keys: bool) -> None:
    """Fill the form: the first label question by its digit key or a click, the rest with the mouse."""
    if keys:
        page.keyboard.press(str(["A", "B", "tie"].index(values["better"]) + 1))
    else:
        page.get_by_role("radiogroup", name=BETTER).get_by_role("radio", name=values["better"]).click()
    settle(page)
    page.get_by_role("radiogroup", name="How clear is the difference?").get_by_role(
        "radio", name=str(values["strength"])
    ).click()
    settle(page)
    for tag in values.get("tags", []):
        page.get_by_role("toolbar", name="What applies? (optional)").get_by_role("button", name=tag).click()
        settle(page)
    order = page.get_by_role("combobox", name="Order the models — click them best first")
    for value in values["order"]:
        order.click()
        page.get_by_role("option", name=value, exact=True).click()
        settle(page)
    page.keyboard.press("Escape")
    if "why" in values:
        page.get_by_label("Why (optional)").fill(values["why"])
        page.get_by_role("heading", name=re.compile(re.escape(TITLE))).first.click()  # leaves the box
        settle(page)


def _submit(page, keys: bool):
    if keys:
        return lambda: page.keyboard.press("Control+Enter")
    return lambda: page.get_by_role("button", name=re.compile("^Submit")).click()


def _item(page) -> str:
    return re.search(r"item (i\d)", item_now(page, TITLE))[1]


def test_three_annotators_label_every_question_type_with_keys_and_mouse(served, browser):
    project, url, _ = served
    for who, keys in (("ann1", True), ("ann2", False), ("ann3", True)):
        page = sign_in(browser, url, who)
        open_kind(page, TITLE)
        page.locator(".prefkit-spans .pk-text").first.wait_for()  # response_a: drawn once, in the picker
        body = page.inner_text("[data-testid=stMain]")
        assert "<b>question" in body and "response **" in body  # fields are text, never markup
        assert page.evaluate("window.__pwned") is None
        for _ in range(2):
            item = _item(page)
            _answer(page, ANSWERS[who][item], keys)
            if who == "ann1" and item == "i1":  # a reload keeps the half-done form
                task = project.store.labels.task_ids_by_ref(NAME, [item])[item]
                draft_kept(
                    project, who, task, lambda s: s.get("q:strength") == 1 and s.get("q:why") == "clear"
                )
                page.reload()
                settle(page)
                group = page.get_by_role("radiogroup", name="How clear is the difference?")
                assert group.get_by_role("radio", name="1").get_attribute("aria-checked") == "true"
            next_item(page, TITLE, _submit(page, keys))
        assert "Nothing left" in page.inner_text("body")
        page.context.close()
    labels = {
        (e.annotator, project.store.labels.task(e.task_id).item_ref): e.values
        for e in project.store.labels.effective_events(NAME)
    }
    assert labels == {(who, item): values for who, mine in ANSWERS.items() for item, values in mine.items()}
    finals = final_labels(project.store, NAME)
    assert {project.store.labels.task(t).item_ref: f.values for t, f in finals.items()} == DECIDED
    rows = {r["field"]: r["alpha"] for r in agreement_rows(project.store, kind=NAME, n_boot=50)}
    assert rows["better"] == pytest.approx(0.375) and rows["strength"] == pytest.approx(158 / 178)


def test_a_required_question_left_open_is_said_and_nothing_is_saved(served, browser):
    project, url, _ = served
    project.store.accounts.add_user("ann4", "annotator", PASSWORD)
    more = write_items(project.root / "more.jsonl", _items(3))
    assert work.create(project, "t", NAME, overlap="1", items=more) == 1
    page = sign_in(browser, url, "ann4")
    open_kind(page, TITLE)
    page.keyboard.press("2")
    settle(page)
    page.keyboard.press("Control+Enter")
    settle(page)
    assert "Answer How clear is the difference?; Order the models first." in page.inner_text("body")
    assert not [e for e in project.store.labels.events(kind=NAME) if e.annotator == "ann4"]


#: The label file's items (overlap 3): i4 labelled by all three with spans and texts, i5 by one only.
FILED = {
    "ann1": {
        "i4": {
            "better": "A",
            "strength": 5,
            "order": ["m2", "m1", "m3"],
            "why": "names the lane",
            "marks": [{"start": 0, "end": 8, "label": "pref"}],
        },
        "i5": {"better": "B", "strength": 3, "order": ["m1", "m2", "m3"]},
    },
    "ann2": {
        "i4": {
            "better": "A",
            "strength": 4,
            "tags": ["x"],
            "order": ["m2", "m1", "m3"],
            "marks": [{"start": 0, "end": 8, "label": "pref"}],
        }
    },
    "ann3": {
        "i4": {"better": "B", "strength": 4, "tags": ["x"], "order": ["m2", "m3", "m1"], "why": "too long"}
    },
}


def test_the_release_ships_what_was_labelled_and_datasets_reads_every_config_typed(
    served, tmp_path, monkeypatch
):
    from test_release_support import cut, hub_offline

    project, _url, _ = served
    assert (
        work.create(project, "f", NAME, overlap="3", items=write_items(tmp_path / "f.jsonl", _items(4, 5)))
        == 2
    )
    pairs = [t.item_ref for t in project.store.labels.tasks(kind="preference_match")]
    matched = {who: {ref: {"coverage": "fully"} for ref in pairs} for who in ANSWERS}
    rows = label_rows(FILED) + label_rows(matched, "preference_match")
    (tmp_path / "labels.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert import_labels(project.store, tmp_path / "labels.jsonl").written == len(rows)
    project.store.accounts.add_user("lead", "maintainer", PASSWORD)
    i2 = project.store.labels.task_ids_by_ref(NAME, ["i2"])["i2"]
    adjudicate(project.store, i2, "lead", {**DECIDED["i2"], "why": "B names both"}, "the text settles it")
    release = cut(project, "0.1.0", override="journey: no gold items").path
    datasets = hub_offline(monkeypatch)
    card = (release / "README.md").read_text(encoding="utf-8")
    alpha = r"\| better \| 3 \| -?\d\.\d{3} \| \\\[-?\d\.\d{3}, -?\d\.\d{3}\\\] \| all items \|"
    assert re.search(alpha, card.split("## Task: ")[1]), "agreement per question, with its interval"
    loaded = {}
    for quoted in re.findall(r"^- config_name: (\S+)$", card.split("\ndataset_info:")[0], re.M):
        name = json.loads(quoted) if quoted.startswith('"') else quoted
        loaded[name] = datasets.load_dataset(str(release), name, cache_dir=str(tmp_path / "hf"))
    assert {
        "matching",
        "labels",
        "final_labels",
        "adjudications",
        NAME,
        f"{NAME}_unverified",
        f"{NAME}_labels",
        f"{NAME}_final_labels",
        f"{NAME}_adjudications",
    } <= set(loaded)
    counts = json.loads((release / "manifest.json").read_text())["counts"]
    assert {n: sum(len(s) for s in ds.values()) for n, ds in loaded.items()} == {n: counts[n] for n in loaded}
    rows = {r["id"]: r for r in loaded[NAME]["test"]}
    assert list(rows) == ["i1", "i2", "i4"]
    features = loaded[NAME]["test"].features
    assert (
        features["answers"]["strength"].dtype == "int64"
        and features["meta"]["session_dates"].feature.dtype == "string"
    )
    assert rows["i1"]["meta"] == _meta(1) and rows["i4"]["meta"] == _meta(4)  # the dates stay text
    assert {i: (r["n_labels"], r["decided_by"]) for i, r in rows.items()} == {
        "i1": (3, "majority"),
        "i2": (3, "adjudicated"),
        "i4": (3, "majority"),
    }
    decided = {
        i: {k: v for k, v in r["answers"].items() if k not in ("why", "marks")} for i, r in rows.items()
    }
    assert decided == {
        "i1": DECIDED["i1"],
        "i2": DECIDED["i2"],
        "i4": {"better": "A", "strength": 4, "tags": ["x"], "order": ["m2", "m1", "m3"]},
    }
    assert rows["i4"]["answers"]["marks"] == [{"start": 0, "end": 8, "label": "pref", "text": "response"}]
    assert rows["i1"]["answers"]["marks"] is None  # nobody marked a word in the browser
    assert sorted(g["text"] for g in rows["i4"]["answers"]["why"]["given"]) == ["names the lane", "too long"]
    assert rows["i1"]["answers"]["why"]["given"][0]["text"] == "clear"  # typed by ann1 in the browser
    assert rows["i2"]["answers"]["why"] == {"given": [], "adjudicated": "B names both"}
    rest = {r["id"]: r for r in loaded[f"{NAME}_unverified"]["test"]}
    assert {i: r["waiting_for"] for i, r in rest.items()} == {
        "i3": "labels (0 of 1)",
        "i5": "labels (1 of 3)",
    }
    labels = loaded[f"{NAME}_labels"][NAME]
    assert labels.features["values"]["marks"].feature["start"].dtype == "int64"
    by_person = {}
    for r in loaded["labels"][NAME]:  # the shared config keeps values as JSON text; the kind's own types them
        by_person[r["id"]] = json.loads(r["values"])
    assert {r["id"]: {k: v for k, v in r["values"].items() if v is not None} for r in labels} == by_person
    assert loaded[f"{NAME}_adjudications"]["log"][0]["values"]["why"] == "B names both"
    assert len(loaded["matching"]["test"]) == 2
