"""Built-in content banks the offline backend writes from (data in ``banks.json``, beside this module):
names, occupations, persona traits, context factors with their preferences and checklists, contrastive
pairs with each side's changed preference (A'), stories, requests, replies and feedback hints.

Checklist questions are all "Does the reply <verb phrase>?" so replies and feedback can reuse the verb
phrase ("I've revised this to <verb phrase>."). Edit the JSON to add content; this module only loads it.
"""

from __future__ import annotations

import json
from importlib import resources

_DATA = json.loads(resources.files(__package__).joinpath("banks.json").read_text(encoding="utf-8"))

FIRST_NAMES: list[str] = _DATA["first_names"]
SURNAMES: list[str] = _DATA["surnames"]
PEOPLE: list[str] = _DATA["people"]
#: (entry, mid, senior) forms of an occupation.
OCCUPATIONS: list[list[str]] = _DATA["occupations"]
CAREER_PHRASES: dict[str, list[str]] = _DATA["career_phrases"]
VALUE_GOALS: dict[str, list[str]] = _DATA["value_goals"]
#: Keyed "trait:level", e.g. "openness:High".
TRAIT_PHRASES: dict[str, str] = _DATA["trait_phrases"]
PAINS: dict[str, str] = _DATA["pains"]
DECISION_HABITS: dict[str, str] = _DATA["decision_habits"]
#: Filler factors; ``{person}`` becomes a name from PEOPLE, ``{first}`` the persona's first name.
FACTORS: list[dict] = _DATA["factors"]
#: Contrastive pairs: same type and family, mutually exclusive preferences, ``changed`` = that side's A'.
PAIRS: list[dict] = _DATA["pairs"]
SHIFT_REASONS: list[str] = _DATA["shift_reasons"]
STORIES: dict[str, list[str]] = _DATA["stories"]
#: Task type -> [what the user is busy with, [opening requests naming {factor}]].
TASKS: dict[str, list] = _DATA["tasks"]
REPLY_OPENERS: list[str] = _DATA["reply_openers"]
REPLY_REVISED: list[str] = _DATA["reply_revised"]
REPLY_BODY: list[str] = _DATA["reply_body"]
HINTS: list[str] = _DATA["hints"]
CLOSINGS: list[str] = _DATA["closings"]
AFFIRMATIONS: list[str] = _DATA["affirmations"]
