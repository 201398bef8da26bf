"""`make demo` builds a complete project offline: every task kind has work, content is marked offline."""

from prefkit.demo import DEMO_PASSWORD, DEMO_USERS, build_demo


def test_demo_project_has_work_of_every_kind_and_is_idempotent(tmp_path):
    project = build_demo(tmp_path / "demo", personas=2, seed=1, log=lambda m: None)
    store = project.store
    kinds = {t.kind for t in store.labels.tasks()}
    assert kinds == {"preference_expressed", "preference_match", "memory_verify"}
    assert store.count("instances") == 6  # three instance types per persona
    assert any(t.is_gold for t in store.labels.tasks("preference_match"))
    for name, role in DEMO_USERS:
        assert store.accounts.authenticate(name, DEMO_PASSWORD).role == role
    with store.read() as conn:
        offline = conn.exec_driver_sql(
            "select count(*) from instances i join provenance p using (provenance_id) where p.offline"
        ).scalar()
    assert offline == 6
    before = store.status()
    project.close()
    again = build_demo(tmp_path / "demo", personas=2, seed=1, log=lambda m: None)
    assert again.store.status() == before
    again.close()
