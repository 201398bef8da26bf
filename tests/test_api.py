"""The public API imports and works end to end without the CLI."""


def test_public_api(tmp_path):
    import prefkit

    assert prefkit.__version__
    project = prefkit.Project.init(tmp_path / "api")
    assert project.store.status()["tasks"] == 0
    assert set(prefkit.TASK_KIND_REGISTRY) == {
        "preference_expressed",
        "preference_match",
        "memory_verify",
        "task_qc",
    }
    assert prefkit.get_kind("preference_match").fields[0].level == "ordinal"
    project.close()
