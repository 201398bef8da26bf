"""The suite's own machinery that CI's time depends on: the order the parallel run hands out files in
(tests/conftest.py) and the browser tests' wait for a Chromium that installs in the background
(appkit.require_chromium, .ci/run)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import pytest
from appkit import require_chromium
from conftest import pytest_collection_modifyitems


@dataclass
class Item:
    nodeid: str
    marks: set[str] = field(default_factory=set)

    def get_closest_marker(self, name: str):
        return name if name in self.marks else None


def ordered(items: list[Item]) -> list[str]:
    pytest_collection_modifyitems(None, items)
    files: list[str] = []
    for item in items:
        path = item.nodeid.split("::")[0]
        if not files or files[-1] != path:
            files.append(path)
    return files


def suite() -> list[Item]:
    return [
        *(Item(f"tests/test_plain.py::t{i}") for i in range(45)),  # many cheap tests outweigh one slow
        Item("tests/test_browser.py::a", {"browser", "slow"}),
        Item("tests/test_browser.py::b", {"browser"}),
        *(Item(f"tests/test_more_browser.py::t{i}", {"browser"}) for i in range(2)),
        Item("tests/test_slow_cli.py::a", {"slow"}),
        Item("tests/test_data.py::a", {"shared_data"}),
        Item("tests/test_data.py::b", {"shared_data"}),
    ]


def test_slow_files_without_a_browser_come_first_then_the_heaviest_each_file_whole():
    files = ordered(suite())
    assert files == [
        "tests/test_slow_cli.py",  # slow, no browser: runs while Chromium may still be installing
        "tests/test_plain.py",  # 45 x 1
        "tests/test_browser.py",  # 30 + 10
        "tests/test_more_browser.py",  # 2 x 10
        "tests/test_data.py",  # 2 x 5
    ]


def test_the_order_is_the_same_whatever_order_the_items_were_collected_in():
    """Every xdist worker must compute the same order, or the run aborts."""
    assert ordered(suite()) == ordered(suite()[::-1])


def test_a_browser_test_waits_for_chromium_s_background_install(tmp_path, monkeypatch):
    status = tmp_path / "status"
    monkeypatch.setenv("PREFKIT_CHROMIUM_READY", str(status))
    done = threading.Timer(0.6, lambda: status.write_text("0\n"))
    t0 = time.monotonic()
    done.start()
    try:
        require_chromium(wait_s=30)
    except pytest.skip.Exception:  # no chromium here at all: the wait still came first
        pass
    finally:
        done.cancel()
    assert time.monotonic() - t0 >= 0.5


def test_a_failed_or_unfinished_install_fails_the_browser_test_with_where_to_look(tmp_path, monkeypatch):
    status = tmp_path / "status"
    monkeypatch.setenv("PREFKIT_CHROMIUM_READY", str(status))
    with pytest.raises(AssertionError, match="did not finish in 1 s"):
        require_chromium(wait_s=1)
    status.write_text("100\n")
    with pytest.raises(AssertionError, match=f"install failed \\(log: {tmp_path / 'log'}\\)"):
        require_chromium()
