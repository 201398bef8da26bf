"""Generate a WildChat-1M-format JSONL file for the ingestion benchmark (synthetic, deterministic).

The shape follows WildChat-1M's rows (schemas/wildchat.py); the mix roughly follows its published
statistics: about half English, most conversations one to three exchanges (so the default 6-249
message filter keeps about a third), a few percent toxic, redacted or moderation-flagged, some
repeated conversations, and users (hashed IP + user agent) with a heavy-tailed number of conversations
clustered in time.

    python bench/gen_wildchat.py --conversations 1000000 --out /tmp/wildchat-1m.jsonl
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

LANGS = (
    ("English", 0.55),
    ("Chinese", 0.2),
    ("Russian", 0.12),
    ("French", 0.05),
    ("Spanish", 0.04),
    ("German", 0.04),
)
UAS = [f"Mozilla/5.0 (platform {i}) AppleWebKit/537.36 Chrome/{100 + i}.0" for i in range(40)]
WORDS = [
    "please",
    "help",
    "write",
    "story",
    "email",
    "code",
    "python",
    "table",
    "summary",
    "plan",
    "trip",
    "recipe",
    "cook",
    "garden",
    "essay",
    "poem",
    "translate",
    "explain",
    "error",
    "function",
    "data",
    "budget",
    "meeting",
    "friend",
    "family",
    "school",
    "job",
    "interview",
    "music",
    "game",
]
T0 = datetime(2023, 4, 9, tzinfo=UTC)


def _text(rng: random.Random, n_words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n_words)).capitalize() + "."


def _language(rng: random.Random) -> str:
    x, acc = rng.random(), 0.0
    for lang, p in LANGS:
        acc += p
        if x < acc:
            return lang
    return "English"


def conversation(rng: random.Random, n: int, user: tuple[str, str], when: datetime) -> dict:
    ip, ua = user
    exchanges = 1
    while rng.random() < 0.6 and exchanges < 130:
        exchanges += 1
    lang = _language(rng)
    toxic, redacted = rng.random() < 0.03, rng.random() < 0.04
    flagged_at = rng.randrange(exchanges * 2) if rng.random() < 0.05 else -1
    turns = []
    for i in range(exchanges * 2):
        user_turn = i % 2 == 0
        turn = {
            "content": _text(rng, rng.randint(3, 14) if user_turn else rng.randint(10, 22)),
            "role": "user" if user_turn else "assistant",
            "language": lang,
            "redacted": redacted and i == 0,
            "toxic": toxic and i == 0,
            "turn_identifier": n * 1000 + i // 2,
            "timestamp": (when + timedelta(seconds=40 * i)).isoformat(),
        }
        if user_turn:
            turn.update(
                hashed_ip=ip, header={"accept-language": "en-US", "user-agent": ua}, state=None, country="US"
            )
        turns.append(turn)
    return {
        "conversation_hash": hashlib.md5(turns[0]["content"].encode() + str(n).encode()).hexdigest(),
        "model": "gpt-3.5-turbo-0613",
        "timestamp": turns[-1]["timestamp"],
        "conversation": turns,
        "turn": exchanges,
        "language": lang,
        "openai_moderation": [{"flagged": i == flagged_at} for i in range(len(turns))],
        "detoxify_moderation": [{"toxicity": 0.01} for _ in range(len(turns))],
        "toxic": toxic,
        "redacted": redacted,
        "state": None,
        "country": "US",
        "hashed_ip": ip,
        "header": {"accept-language": "en-US", "user-agent": ua},
    }


def generate(n: int, out: Path, seed: int = 0) -> None:
    rng = random.Random(seed)
    users: list[tuple[tuple[str, str], datetime, int]] = []  # (user, last time, conversations left)
    written = 0
    with out.open("w", encoding="utf-8") as f:
        previous: dict[tuple[str, str], str] = {}
        while written < n:
            if not users or rng.random() < 0.35:
                user = (hashlib.sha256(f"ip{len(users)}:{seed}".encode()).hexdigest(), rng.choice(UAS))
                users.append(
                    (
                        user,
                        T0 + timedelta(minutes=rng.randrange(525_600)),
                        max(1, int(rng.paretovariate(1.3))),
                    )
                )
            k = rng.randrange(len(users))
            user, last, left = users[k]
            if rng.random() < 0.02 and user in previous:
                f.write(previous[user])  # a repeated conversation of the same user
                written += 1
                continue
            when = last + timedelta(hours=rng.expovariate(1 / 30))
            line = json.dumps(conversation(rng, written, user, when), separators=(",", ":")) + "\n"
            f.write(line)
            previous[user] = line
            written += 1
            users[k] = (user, when, left - 1)
            if left <= 1:
                users[k] = users[-1]
                users.pop()
                previous.pop(user, None)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--conversations", type=int, default=1_000_000)
    ap.add_argument("--out", type=Path, default=Path("/tmp/wildchat-1m.jsonl"))
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    t = time.perf_counter()
    generate(args.conversations, args.out, args.seed)
    size = args.out.stat().st_size
    print(
        f"wrote {args.conversations:,} conversations to {args.out} ({size / 1e9:.2f} GB) in {time.perf_counter() - t:.1f} s"
    )


if __name__ == "__main__":
    main()
