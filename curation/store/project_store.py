"""The project store: one engine and its transactions (:class:`StoreCore`) with each area of the
data a member sharing them. :class:`prefkit.curation.project.Project` opens it (``project.store``)."""

from __future__ import annotations

from pathlib import Path

from prefkit.curation.store.accounts import Accounts
from prefkit.curation.store.alps_tasks import AlpsTasks
from prefkit.curation.store.assignments import Assignments
from prefkit.curation.store.audit import Audit
from prefkit.curation.store.content import Content
from prefkit.curation.store.drafts import Drafts
from prefkit.curation.store.engine import StoreCore
from prefkit.curation.store.eval import Eval
from prefkit.curation.store.generation import Generation
from prefkit.curation.store.glance import COUNTS
from prefkit.curation.store.guidelines import Guidelines
from prefkit.curation.store.items import Items
from prefkit.curation.store.labels import Labels
from prefkit.curation.store.labelstudio import LabelStudio
from prefkit.curation.store.llm import LLM
from prefkit.curation.store.progress import Progress
from prefkit.curation.store.releases import Releases
from prefkit.curation.store.repeats import Repeats
from prefkit.curation.store.sessions import Sessions
from prefkit.curation.store.stale import Stale
from prefkit.curation.store.studies import Studies
from prefkit.curation.store.submits import Submits
from prefkit.curation.store.suggestions import Suggestions
from prefkit.schemas.config import Consensus


class ProjectStore(StoreCore):
    """The project's working database: one engine and its transactions (:class:`StoreCore`), with
    each area of the data a member that shares them. One instance per process is enough; it is
    thread-safe.

    docs/ARCHITECTURE.md lists the members, the module of each and what it holds (a test keeps that
    table equal to the members set here).

    Transactions stay on the store (``store.write()``, ``store.read()``); an area method that must
    join the caller's transaction takes the connection as its first argument
    (``store.labels.insert_event(conn, event)``).
    """

    #: How a unit without an adjudication is decided (``[release] consensus``; ``Project.store`` sets
    #: them from the config): "majority", "dawid_skene" or "mace", and the posterior a unit needs.
    consensus_method: Consensus = "majority"
    consensus_confidence: float = 0.9

    def __init__(self, db: str | Path, retry_s: float | None = None, migration_wait_s: int | None = None):
        super().__init__(db, retry_s, migration_wait_s)
        self.content = Content(self)
        self.hidden = {"dialogues": self.content.staged_dialogues, "sources": self.content.staged_sources}
        self.generation = Generation(self)
        self.audit = Audit(self)
        self.accounts = Accounts(self, self.audit)
        self.repeats = Repeats(self)
        self.labels = Labels(self, self.repeats)
        self.stale = Stale(self)
        self.assignments = Assignments(self, self.labels, self.stale)
        self.submits = Submits(self, self.labels)
        self.drafts = Drafts(self, self.labels)
        self.progress = Progress(self)
        self.items = Items(self, self.labels)
        self.labelstudio = LabelStudio(self, self.labels)
        self.llm = LLM(self)
        self.eval = Eval(self)
        self.alps_tasks = AlpsTasks(self)
        self.suggestions = Suggestions(self)
        self.releases = Releases(self)
        self.sessions = Sessions(self)
        self.studies = Studies(self)
        self.guidelines = Guidelines(self)

    def status(self) -> dict[str, int]:
        """Counts per stage, as ``prefkit status --json`` prints them (:data:`glance.COUNTS`)."""
        counts = {name: self.count(table, **where) for name, table, where in COUNTS}
        counts["turns"] += self.content.packed_turn_count()
        return counts
