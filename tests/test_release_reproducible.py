"""A release depends on the decisions, not on random ids: the same labels and adjudication recorded in
two fresh projects give the same data files (the README tour's printed hash relies on it)."""

from __future__ import annotations

from prefkit.curation.project import Project
from prefkit.exports.release import cut_release
from test_release_support import fast_agreement, labelled_project


def test_the_same_decisions_in_two_fresh_projects_cut_the_same_data(project, tmp_path):
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    labelled_project(project, tmp_path / "a")  # labels of 3 annotators, a tie adjudicated, CUPID rows
    other = Project.init(tmp_path / "other", name=project.name)
    try:
        # pseudonyms follow the order the accounts were made, not the project's secret salt
        assert other.store.releases.annotator_salt() != project.store.releases.annotator_salt()
        labelled_project(other, tmp_path / "b")
        a = cut_release(project, "1.0.0", agreement=fast_agreement(project.store))
        b = cut_release(other, "1.0.0", agreement=fast_agreement(other.store))
        assert a.gates_passed and b.gates_passed
        assert a.data_sha256 == b.data_sha256  # every data/ file, adjudications/log.jsonl among them
        log = "data/adjudications/log.jsonl"
        assert (a.path / log).read_bytes() == (b.path / log).read_bytes()
        (adj_a,), (adj_b,) = project.store.labels.adjudications(), other.store.labels.adjudications()
        assert adj_a.adjudication_id == adj_b.adjudication_id and adj_a.created_at != adj_b.created_at
    finally:
        other.close()
