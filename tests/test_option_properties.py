"""Property tests (hypothesis) over every command's numeric and path options and over the WildChat
and AlpsBench-predictions contracts: a refused value or row is one clear line and a non-zero exit,
never a traceback, and the store is unchanged. Example counts stay modest so the suite stays fast."""

from __future__ import annotations

import json
import shutil
import sqlite3
from datetime import timedelta
from pathlib import Path

import click
import pytest
import wildchat_fixture as fx
from click.testing import CliRunner
from evalkit import write_config
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prefkit.cli import cli
from prefkit.cli.types import NUMERIC_TYPES, DistinctInts, FiniteFloat, SafePath
from prefkit.curation.project import Project
from prefkit.schemas.wildchat import WildChatConversation
from pydantic import ValidationError

SETTINGS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def _commands(group: click.Group, prefix: tuple[str, ...] = ()):
    for name in group.list_commands(click.Context(group)):
        cmd = group.get_command(click.Context(group), name)
        if isinstance(cmd, click.Group):
            yield from _commands(cmd, (*prefix, name))
        else:
            yield (*prefix, name), cmd


COMMANDS = list(_commands(cli))
NUMERIC = [
    (path, opt)
    for path, cmd in COMMANDS
    for opt in cmd.params
    if isinstance(opt, click.Option)
    and opt.type.name in ("integer", "float", "integer range", "float range", "number", "list")
]
PATHS = [
    (path, opt)
    for path, cmd in COMMANDS
    for opt in cmd.params
    if isinstance(opt, click.Option) and isinstance(opt.type, click.Path)
]


def test_every_numeric_and_path_option_uses_the_shared_types():
    """The same mistake is refused the same way on every command: no bare int/float, no bare Path."""
    assert len(NUMERIC) > 25 and len(PATHS) > 5
    loose = [f"{' '.join(p)} {o.opts[0]}" for p, o in NUMERIC if not isinstance(o.type, NUMERIC_TYPES)]
    loose += [f"{' '.join(p)} {o.opts[0]}" for p, o in PATHS if not isinstance(o.type, SafePath)]
    loose += [
        f"{' '.join(p)} {a.name}"
        for p, c in COMMANDS
        for a in c.params
        if isinstance(a, click.Argument)
        and isinstance(a.type, click.Path)
        and not isinstance(a.type, SafePath)
    ]
    assert loose == []


def _bad_value(option: click.Option) -> st.SearchStrategy[str]:
    """Values the option's type must refuse."""
    t = option.type
    garbage = st.sampled_from(["nan", "inf", "-inf", "x", "", "1e999", "9" * 5000, "1.5.2", "0x10", "--"])
    if isinstance(t, FiniteFloat):
        outside = []
        if t.min is not None:
            outside.append(
                st.floats(max_value=t.min, allow_nan=False, allow_infinity=False)
                .filter(lambda v: v < t.min or (t.min_open and v == t.min))
                .map(repr)
            )
        if t.max is not None:
            outside.append(
                st.floats(min_value=t.max, allow_nan=False, allow_infinity=False)
                .filter(lambda v: v > t.max or (t.max_open and v == t.max))
                .map(repr)
            )
        return st.one_of(garbage, *outside)
    if isinstance(t, DistinctInts):
        return st.one_of(
            st.sampled_from(["3,3", "0", "-1,5", "a,b", ",", "5,,6"]), st.integers(-(10**6), 0).map(str)
        )
    low = getattr(t, "min", None)
    high = getattr(t, "max", None)
    outside = [st.sampled_from(["1.5", "x", "nan", "9" * 5000, ""])]
    if low is not None:
        outside.append(st.integers(max_value=low - 1).map(str))
    if high is not None:
        outside.append(st.integers(min_value=high + 1).map(str))
    return st.one_of(*outside)


def _snapshot(root: Path) -> dict[str, int]:
    with sqlite3.connect(root / "project.db") as db:
        names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {n: db.execute(f'SELECT COUNT(*) FROM "{n}"').fetchone()[0] for n in names}


@pytest.fixture(scope="module")
def shared(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("props") / "proj"
    Project.init(root).close()
    return root


def _refused(result, root: Path, before: dict[str, int], needle: str) -> None:
    out = result.output
    assert result.exit_code == 2, out  # a usage error, before the command body ran
    assert isinstance(result.exception, SystemExit) and "Traceback" not in out
    assert out.strip().splitlines()[-1].startswith("Error: Invalid value for"), out
    assert needle in out
    assert _snapshot(root) == before


@SETTINGS
@given(data=st.data())
def test_property_bad_numeric_option_values_are_refused_before_anything_runs(shared, data):
    """``_refused`` asserts exit 2, one line naming the option, and the project unchanged."""
    path, option = data.draw(st.sampled_from(NUMERIC), label="option")
    value = data.draw(_bad_value(option), label="value")
    before = _snapshot(shared)
    flag = option.opts[0]
    result = CliRunner().invoke(cli, [*path, flag, value], env={"PREFKIT_PROJECT": str(shared)})
    _refused(result, shared, before, flag)


@SETTINGS
@given(data=st.data())
def test_property_bad_path_option_values_are_refused(shared, data):
    """``_refused`` asserts exit 2, one line naming the option, and the project unchanged."""
    path, option = data.draw(st.sampled_from(PATHS), label="option")
    value = data.draw(
        st.one_of(
            st.text(min_size=0, max_size=20).map(lambda t: t + "\x00" + "x"),
            st.just("p" * 5000),
        ),
        label="value",
    )
    before = _snapshot(shared)
    result = CliRunner().invoke(cli, [*path, option.opts[0], value], env={"PREFKIT_PROJECT": str(shared)})
    _refused(result, shared, before, option.opts[0])


# -- the WildChat contract: the ingest refuses exactly what the contract refuses ---------------------------------
FIELD_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 10**20),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.sampled_from(["2023-05-01T08:00:00+00:00", "not a date", "user", "assistant", "English"]),
)
TOP = """conversation_hash model timestamp turn language openai_moderation detoxify_moderation toxic
    redacted state country hashed_ip header""".split()
TURN = "content role language redacted toxic turn_identifier hashed_ip state country header".split()


@st.composite
def wildchat_row(draw):
    row = fx.conversation(7, "prop", fx.T0 + timedelta(hours=1), ip="ip_prop")
    where = draw(st.sampled_from(["top", "turn", "drop"]))
    if where == "top":
        row[draw(st.sampled_from(TOP))] = draw(FIELD_VALUES)
    elif where == "turn":
        row["conversation"][draw(st.integers(0, 5))][draw(st.sampled_from(TURN))] = draw(FIELD_VALUES)
    else:
        row.pop(draw(st.sampled_from(TOP)))
    return row


@pytest.fixture(scope="module")
def wc_template(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("wc") / "proj"
    Project.init(root).close()
    return root


@SETTINGS
@given(row=wildchat_row())
def test_property_wildchat_rows_are_refused_exactly_when_the_contract_refuses(
    wc_template, tmp_path_factory, row
):
    try:
        WildChatConversation.model_validate(json.loads(json.dumps(row)), strict=True)
        valid = True
    except ValidationError:
        valid = False
    root = Path(shutil.copytree(wc_template, tmp_path_factory.mktemp("case") / "proj"))
    good = fx.conversation(1, "good", fx.T0, ip="ip_good")
    path = root.parent / "w.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(row) + "\n", encoding="utf-8")
    before = _snapshot(root)
    result = CliRunner().invoke(
        cli,
        f"""ingest wildchat {path} -p {root} --no-progress --min-turns 1 --any-language --keep-toxic
        --keep-redacted""".split(),
    )
    if valid:
        assert result.exit_code == 0, result.output
        return
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    line = result.output.strip().splitlines()[-1]
    assert line.startswith(f"error: {path}:2: "), result.output
    assert _snapshot(root) == before


# -- the AlpsBench predictions contract ------------------------------------------------------------------------
MEMORY = {
    "memory_id": "m1",
    "type": "direct",
    "label": "Preferences/Food",
    "value": "Likes tea",
    "confidence": 0.9,
}


@pytest.fixture(scope="module")
def alps(tmp_path_factory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("alps")
    rel = base / "rel"
    write_config(
        rel,
        "alpsbench_task1",
        "validation",
        [
            {
                "benchmark_id": "s1",
                "task": "task1",
                "input": {"dialogue": []},
                "gold": {"memory_items": [MEMORY]},
            }
        ],
    )
    root = base / "proj"
    Project.init(root).close()
    return rel, root


@st.composite
def bad_prediction(draw):
    field = draw(
        st.sampled_from(["type", "label", "value", "confidence", "memory_items", "benchmark_id", "extra"])
    )
    wrong = {
        "type": st.one_of(
            st.text(max_size=6).filter(lambda t: t not in ("direct", "indirect")), st.integers()
        ),
        "label": st.one_of(st.integers(), st.just(""), st.lists(st.text(max_size=2), max_size=1)),
        "value": st.one_of(
            st.integers(), st.dictionaries(st.text(max_size=2), st.text(max_size=2), max_size=1), st.just("")
        ),
        "confidence": st.one_of(
            st.text(max_size=5),
            st.floats(min_value=1.0001, max_value=1e308),
            st.floats(max_value=-0.0001, min_value=-1e308),
            st.booleans(),
        ),
        "memory_items": st.one_of(st.none(), st.text(max_size=3), st.integers()),
        "benchmark_id": st.one_of(st.just(""), st.integers(), st.just("not-a-row")),
        "extra": st.integers(),
    }[field]
    value = draw(wrong)
    line = {"benchmark_id": "s1", "memory_items": [dict(MEMORY)]}
    if field in ("memory_items", "benchmark_id"):
        line[field] = value
    elif field == "extra":
        line["unknown_field"] = value
    else:
        line["memory_items"][0][field] = value
    return line


@SETTINGS
@given(line=bad_prediction())
def test_property_bad_predictions_are_one_line_and_record_no_run(alps, tmp_path_factory, line):
    rel, root = alps
    preds = tmp_path_factory.mktemp("p") / "preds.jsonl"
    preds.write_text(json.dumps(line) + "\n", encoding="utf-8")
    before = _snapshot(root)
    result = CliRunner().invoke(
        cli,
        f"eval alpsbench --release {rel} --task 1 --predictions {preds} --backend offline -p {root}".split(),
    )
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    out = result.output.strip().splitlines()
    assert out[-1].startswith(f"error: {preds}:1: ") and "Traceback" not in result.output
    assert _snapshot(root) == before  # no run recorded, nothing else written
