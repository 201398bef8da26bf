"""A crowd study of a declared kind: created through the CLI, its gold items (``gold`` in the item
lines) the attention checks that screen a participant out or let them complete."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from click.testing import CliRunner
from declaredkind import ITEMS, NAME, declare, write_items
from prefkit.cli import cli
from prefkit.curation.annotation import studies, work, workflow
from prefkit.curation.annotation.declared import use_project_kinds

RIGHT = {"better": "A", "strength": 3, "order": ["m1", "m2", "m3"]}
WRONG = {"better": "B", "strength": 1, "order": ["m3", "m2", "m1"]}  # one unit of five right


@pytest.fixture
def study(project, tmp_path):
    declare(project.root)
    use_project_kinds(project.root, project.store)
    items = [{**ITEMS[n % 2], "id": f"i{n}"} | ({"gold": RIGHT} if n < 2 else {}) for n in range(6)]
    assert work.create(project, "t", NAME, overlap="2", items=write_items(tmp_path / "i.jsonl", items)) == 6
    args = [
        "crowd",
        "study",
        "create",
        "pilot",
        "--kind",
        NAME,
        "--batch",
        "default",
        "--items",
        "4",
        "--gold-share",
        "0.5",
        "--screen-below",
        "0.75",
        "--completion-code",
        "C0DE1",
        "--screened-out-code",
        "SCR33N",
        "--reward",
        "2",
        "-p",
        str(project.root),
    ]
    out = CliRunner().invoke(cli, args)
    assert out.exit_code == 0, out.output
    url = next(w for w in out.output.split() if "?study=pilot." in w)
    return project, studies.get_study(project, "pilot"), url


def _arrive(project, url, pid):
    query = {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
    params = {**query, "PROLIFIC_PID": pid, "SESSION_ID": f"s-{pid}", "STUDY_ID": "ps1"}
    return studies.arrive(project, params).account.username


@pytest.mark.parametrize(
    ("gold", "status", "code"), [(RIGHT, "completed", "C0DE1"), (WRONG, "screened_out", "SCR33N")]
)
def test_gold_items_of_a_declared_kind_screen_participants(study, gold, status, code):
    project, s, url = study
    assert (s.kind, studies.n_gold(s)) == (NAME, 2)
    who = _arrive(project, url, "5f1a2b3c4d5e6f7a8b9c0d1e")
    seen = []
    while (view := studies.participant_view(project, s, who)).status == "active":
        seen.append(view.item.task.is_gold)
        workflow.submit(project, who, view.item, gold if view.item.task.is_gold else RIGHT)
    assert (view.status, view.code) == (status, code) and view.gold.done >= 1
    if status == "completed":  # every item of their share, two of them gold
        assert (len(seen), seen.count(True)) == (4, 2)
    else:  # stopped at the first gold item they got wrong
        assert (seen[-1], seen.count(True)) == (True, 1)
