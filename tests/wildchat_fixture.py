"""A WildChat-1M-format JSONL fixture with known contents: how many rows each filter removes, which
users (hashed IP + user agent) own which conversations, and where the malformed lines are."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

T0 = datetime(2023, 5, 1, 8, 0, tzinfo=UTC)
UA = "Mozilla/5.0 (X11; Linux x86_64) Firefox/115.0"

#: Conversations per user, and the hour offsets between them (a gap above 72 h splits a sequence).
USERS = {
    "ip_alice": [0, 1, 2, 3, 4],  # one sequence of 5
    "ip_bob": [0, 2, 4],  # one sequence of 3
    "ip_carol": [0, 5, 200, 201, 202],  # split by the 195 h pause: 2 + 3
    "ip_dave": [0],  # alone: below the minimum sequence size
}
#: Kept conversations with no hashed IP (cannot be attributed): one-conversation sequences.
UNATTRIBUTED = 180
#: Conversations each filter removes (duplicates are copies of alice's first conversation).
REMOVED = {
    "language": 40,
    "turns": 30,  # 20 too short, 10 too long
    "user_chars": 10,
    "toxic": 8,
    "redacted": 7,
    "moderation": 6,
    "duplicate": 5,
}
#: Malformed lines: bad JSON, a missing conversation_hash, a conversation that is not a list.
BAD_LINES = 3


def conversation(
    n: int,
    key: str,
    when: datetime,
    *,
    ip: str | None,
    n_turns: int = 6,
    language: str = "English",
    toxic: bool = False,
    redacted: bool = False,
    flagged: bool = False,
    user_text: str | None = None,
) -> dict[str, Any]:
    turns = []
    for i in range(n_turns):
        role = "user" if i % 2 == 0 else "assistant"
        text = (
            (user_text if user_text is not None else f"{key} question {i}: how do I plan a trip?")
            if role == "user"
            else f"Answer {i} for {key}."
        )
        turns.append(
            {
                "content": text,
                "role": role,
                "language": language,
                "redacted": redacted,
                "toxic": toxic,
                "turn_identifier": 1000 * n + i,
                "timestamp": (when + timedelta(minutes=i)).isoformat(),
                **({"hashed_ip": ip, "header": {"user-agent": UA}} if role == "user" else {}),
            }
        )
    return {
        "conversation_hash": f"h_{key}",
        "model": "gpt-4-0314",
        "timestamp": when.isoformat(),
        "conversation": turns,
        "turn": n_turns // 2,
        "language": language,
        "openai_moderation": [
            {"flagged": flagged and i == 0, "categories": {"harassment": False}} for i in range(n_turns)
        ],
        "detoxify_moderation": [{"toxicity": 0.01} for _ in range(n_turns)],
        "toxic": toxic,
        "redacted": redacted,
        "state": None,
        "country": "France",
        "hashed_ip": ip,
        "header": {"user-agent": UA, "accept-language": "en"} if ip else None,
    }


def kept_rows() -> list[dict[str, Any]]:
    rows, n = [], 0
    for ip, hours in USERS.items():
        for k, h in enumerate(hours):
            rows.append(conversation(n, f"{ip}_{k}", T0 + timedelta(hours=h), ip=ip))
            n += 1
    for k in range(UNATTRIBUTED):
        rows.append(conversation(n, f"anon_{k}", T0 + timedelta(minutes=k), ip=None))
        n += 1
    return rows


def removed_rows() -> list[dict[str, Any]]:
    rows, n = [], 10_000

    def add(count: int, **kw) -> None:
        nonlocal n
        for _ in range(count):
            rows.append(conversation(n, f"drop_{n}", T0, ip="ip_x", **kw))
            n += 1

    add(REMOVED["language"], language="Chinese")
    add(20, n_turns=4)
    add(10, n_turns=250)
    add(REMOVED["user_chars"], user_text=" a ")
    add(REMOVED["toxic"], toxic=True)
    add(REMOVED["redacted"], redacted=True)
    add(REMOVED["moderation"], flagged=True)
    for _ in range(REMOVED["duplicate"]):
        rows.append(conversation(0, "ip_alice_0", T0 + timedelta(hours=30), ip="ip_alice"))
    return rows


def write_fixture(path: Path, bad: bool = True) -> dict[str, int]:
    """Write the fixture; returns where its bad lines are (line number -> kind)."""
    rows = kept_rows() + removed_rows()
    # Interleave so filters and users are not in file order.
    rows = rows[::2] + rows[1::2]
    lines = [json.dumps(r) for r in rows]
    bad_at: dict[str, int] = {}
    if bad:
        missing = dict(rows[0])
        missing.pop("conversation_hash")
        not_list = {**rows[1], "conversation": "hello"}
        for kind, text, at in (
            ("json", '{"conversation_hash": "h_broken", "conversation": [', 17),
            ("missing", json.dumps(missing), 120),
            ("not_list", json.dumps(not_list), 250),
        ):
            lines.insert(at - 1, text)
            bad_at[kind] = at
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return bad_at


def ingest_clean(store, tmp: Path) -> Path:
    """The fixture without bad lines written to ``tmp/wc.jsonl`` and ingested into ``store``."""
    from prefkit.pipelines.ingest.wildchat import ingest_wildchat

    path = tmp / "wc.jsonl"
    write_fixture(path, bad=False)
    ingest_wildchat(store, [path])
    return path


def extracted_project(tmp: Path, limit: int):
    """A new project at ``tmp/p`` with the clean fixture ingested and the memories of ``limit``
    dialogues extracted by the offline backend: ``(project, extraction report)``."""
    from prefkit.curation.project import Project
    from prefkit.pipelines.llm import LLMLayer
    from prefkit.pipelines.memories.extract import ExtractionConfig, run_extraction

    project = Project.init(tmp / "p")
    ingest_clean(project.store, tmp)
    with LLMLayer(project.store, llm_config=project.config.llm, backend="offline", progress=False) as layer:
        report = run_extraction(project.store, layer, ExtractionConfig(limit=limit, require_implicit=False))
    return project, report


def expected_kept() -> int:
    return sum(len(h) for h in USERS.values()) + UNATTRIBUTED


def total_rows() -> int:
    return len(kept_rows()) + len(removed_rows())
