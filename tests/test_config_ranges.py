"""Issue 32 (reliability round 4), item 2: every number of ``prefkit.toml`` has a finite range, checked
when the file is read, and a value outside it (or ``inf``, ``nan``) is one line naming the key, the value
and the range. The keys come from the pydantic models themselves (``numeric_keys``), so a numeric key
added later is fuzzed here with no new test, and one added without bounds fails the first test.
``tasks create --overlap`` is capped at ``MAX_OVERLAP`` the same way."""

from __future__ import annotations

import math
import re

import pytest
from appkit import seed_pairs
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prefkit.cli import cli
from prefkit.curation.annotation.task_admin import TaskFileError, create_tasks
from prefkit.curation.project import Project
from prefkit.curation.project_dir import CONFIG_NAME
from prefkit.schemas.config import (
    MAX_OVERLAP,
    ConfigError,
    NumericKey,
    OverlapRange,
    ProjectConfig,
    numeric_keys,
)

KEYS = numeric_keys()
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _low(k: NumericKey) -> float:
    return k.ge if k.ge is not None else k.gt  # type: ignore[return-value]


def _high(k: NumericKey) -> float:
    return k.le if k.le is not None else k.lt  # type: ignore[return-value]


def _document(key: NumericKey, value: object) -> tuple[dict, str]:
    """A ``prefkit.toml`` document holding ``value`` at ``key`` (a table's ``*`` becomes ``default``),
    and the key as an error names it. A table with required keys (``overlap = {min, max}``) gets them
    at their widest (``min`` at its lowest, anything else at its highest)."""
    path = ["default" if p == "*" else p for p in key.path]
    doc: dict = {}
    table = doc
    for part in path[:-1]:
        table = table.setdefault(part, {})
    siblings = [k for k in KEYS if k.path[:-1] == key.path[:-1] and k.path != key.path]
    if key.path[:-1] == ("annotation", "overlap"):
        for k in siblings:
            if k.path[-1] in ("min", "max"):
                table[k.path[-1]] = int(_low(k) if k.path[-1] == "min" else _high(k))
    table[path[-1]] = value
    return doc, ".".join(path)


def test_every_numeric_key_has_a_finite_range():
    """Found from the models (a new key is listed without a test's edit), each bounded on both sides."""
    assert len(KEYS) >= 45
    for key in (
        "annotation.sign_in.session_hours",
        "annotation.queue_chunk",
        "annotation.overlap",
        "annotation.overlap.max",
        "llm.costs.*.*",
        "release.alpha_min.*",
    ):
        assert key in {k.key for k in KEYS}
    unbounded = [k.key for k in KEYS if _low(k) is None or _high(k) is None]
    assert unbounded == []
    assert all(math.isfinite(_low(k)) and math.isfinite(_high(k)) for k in KEYS)


def _refused(key: NumericKey, value: float) -> None:
    doc, name = _document(key, value)
    with pytest.raises(ConfigError) as err:
        ProjectConfig.parse(doc)
    line = str(err.value)
    assert "\n" not in line
    assert line == f"prefkit.toml: {name} = {value!r}: must be {key.range}", line


def _loads(key: NumericKey, value: float) -> None:
    doc, _ = _document(key, value)
    config = ProjectConfig.parse(doc)
    got: object = config.model_dump()
    for part in doc_path(key):
        got = got[part]  # type: ignore[index]
    assert got == value


def doc_path(key: NumericKey) -> list[str]:
    return ["default" if p == "*" else p for p in key.path]


def _outside(key: NumericKey) -> st.SearchStrategy:
    low, high = _low(key), _high(key)
    edges = [st.sampled_from([math.inf, -math.inf, math.nan])]
    if key.kind is int:
        edges += [
            st.integers(max_value=int(math.ceil(low)) - 1).filter(lambda v: not key.holds(v)),
            st.integers(min_value=int(high) + 1, max_value=int(high) + 10**12),
        ]
    else:
        edges += [
            st.floats(max_value=low, allow_nan=False, allow_infinity=False).filter(
                lambda v: not key.holds(v)
            ),
            st.floats(min_value=high, allow_nan=False, allow_infinity=False).filter(
                lambda v: not key.holds(v)
            ),
        ]
    return st.one_of(*edges)


def _inside(key: NumericKey) -> st.SearchStrategy:
    if key.kind is int:
        return st.integers(int(math.ceil(_low(key))), int(_high(key))).filter(key.holds)
    return st.floats(_low(key), _high(key), allow_nan=False, allow_infinity=False).filter(key.holds)


@SETTINGS
@given(data=st.data())
def test_property_a_number_outside_its_range_is_one_line_naming_key_value_and_range(data):
    """``_refused`` asserts the one ConfigError line naming the key, the value and the range."""
    key = data.draw(st.sampled_from(KEYS), label="key")
    _refused(key, data.draw(_outside(key), label="value"))


@SETTINGS
@given(data=st.data())
def test_property_a_number_inside_its_range_loads(data):
    """``_loads`` asserts the project loads with the value and reads it back."""
    key = data.draw(st.sampled_from(KEYS), label="key")
    _loads(key, data.draw(_inside(key), label="value"))


@pytest.mark.parametrize("key", KEYS, ids=[k.key for k in KEYS])
def test_each_key_refuses_inf_nan_and_the_values_past_its_bounds_and_takes_its_bounds(key):
    """``_refused`` and ``_loads`` assert each value: refused in one line, or loaded and read back."""
    low, high = _low(key), _high(key)
    for bad in (math.inf, -math.inf, math.nan):
        _refused(key, bad)
    step = 1 if key.kind is int else 0
    _refused(key, low - 1 if key.ge is not None or step else low)
    _refused(key, high + 1 if key.le is not None or step else high)
    if key.ge is not None:
        _loads(key, key.kind(low))
    if key.le is not None:
        _loads(key, key.kind(high))


@pytest.mark.parametrize(
    "table, text, key",
    [
        ("annotation.sign_in", "session_hours = inf", "annotation.sign_in.session_hours = inf"),
        ("annotation.sign_in", "session_hours = 1e12", "annotation.sign_in.session_hours = 1000000000000.0"),
        ("annotation.sign_in", "lockout_minutes = -1", "annotation.sign_in.lockout_minutes = -1"),
        ("annotation.sign_in", "lockout_minutes = nan", "annotation.sign_in.lockout_minutes = nan"),
        ("annotation.sign_in", "free_failures = 1000000000", "annotation.sign_in.free_failures = 1000000000"),
        ("annotation.sign_in", "lockout_after = 0", "annotation.sign_in.lockout_after = 0"),
        ("annotation.sign_in", "client_factor = 0", "annotation.sign_in.client_factor = 0"),
        ("annotation.sign_in", "backoff_s = inf", "annotation.sign_in.backoff_s = inf"),
        ("annotation.sign_in", "max_backoff_s = -1", "annotation.sign_in.max_backoff_s = -1"),
        ("annotation", "queue_chunk = 0", "annotation.queue_chunk = 0"),
        ("annotation", "stale_after_hours = -1", "annotation.stale_after_hours = -1"),
        ("annotation", "stale_after_hours = nan", "annotation.stale_after_hours = nan"),
        ("annotation", "undo_depth = 0", "annotation.undo_depth = 0"),
    ],
)
def test_the_reported_values_in_a_project_file_are_one_line_from_the_cli(tmp_path, table, text, key):
    root = tmp_path / "p"
    Project.init(root).close()
    config = root / CONFIG_NAME
    name = text.split(" = ")[0]
    template = config.read_text()
    assert f"[{table}]" in template
    written, n = re.subn(rf"^{name} = .*$", text, template, flags=re.MULTILINE)
    if n == 0:  # a key the template leaves out: right under its table's header
        written = template.replace(f"[{table}]\n", f"[{table}]\n{text}\n", 1)
    assert n <= 1 and text in written
    config.write_text(written)
    out = CliRunner().invoke(cli, ["tasks", "list", "-p", str(root)])
    assert out.exit_code == 1, out.output
    assert out.output.count("\n") == 1 and "Traceback" not in out.output
    assert f"{key}: must be " in out.output and out.output.startswith("error: "), out.output


@pytest.mark.parametrize(
    "text", ["99999999999999999999", "9223372036854775807", "2..1000000000", "101", "1..101"]
)
def test_overlap_is_capped_in_one_line(tmp_path, text):
    root = tmp_path / "p"
    project = Project.init(root)
    seed_pairs(project, 2)
    out = CliRunner().invoke(
        cli, ["tasks", "create", "-p", str(root), "--kind", "preference_match", "--overlap", text]
    )
    assert (
        out.exit_code == 1
        and out.output == f"error: overlap {text!r}: at most {MAX_OVERLAP} annotators per item\n"
    )
    assert project.store.count("tasks") == 0
    with pytest.raises(ConfigError, match="at most 100"):
        OverlapRange.parse(text)
    with pytest.raises(TaskFileError, match="give 1 to 100"):
        create_tasks(project, "preference_match", overlap=10**20)
    assert OverlapRange.parse(str(MAX_OVERLAP)) == MAX_OVERLAP
    project.close()
