"""Release area of the project store: the log of cut releases, annotator pseudonyms, and the reads a
release needs across content tables (provenance of released records, offline-generated content).

Release files themselves are written by :mod:`prefkit.exports.release`; this area only records that a release
was cut (version, digests, override reason) so the project keeps an audit trail of what left it.
"""

from __future__ import annotations

import hmac
from collections import Counter
from dataclasses import dataclass
from hashlib import sha256

from prefkit.curation.store.engine import StoreArea, StoreError
from prefkit.schemas.curation import ProvenanceSummary, SourceSummary
from sqlalchemy import func, select

#: Content tables whose rows are released records, with their key column.
RELEASED_TABLES: dict[str, str] = {
    "personas": "persona_id",
    "context_factors": "factor_id",
    "session_plans": "persona_id",
    "dialogues": "dialogue_id",
    "sessions": "session_id",
    "instances": "instance_id",
    "memories": "memory_pk",
    "preference_pairs": "pair_id",
    "alps_tasks": "benchmark_id",
}


@dataclass(frozen=True, slots=True)
class OfflineReference:
    """A released record made by the offline backend."""

    table: str
    id: str
    provenance_id: str


@dataclass(frozen=True, slots=True)
class ReleaseRecord:
    """One cut release in the project's log (digests of its manifest and data, gates, override)."""

    version: str
    created_at: str
    path: str
    manifest_sha256: str
    data_sha256: str
    gates_passed: bool
    override_reason: str | None = None


class Releases(StoreArea):
    """Release log, pseudonyms and release-time reads (``store.releases``)."""

    # -- pseudonyms -------------------------------------------------------------------------------
    def annotator_salt(self) -> str:
        salt = self.core.get_meta("release.annotator_salt")
        if not salt:
            raise StoreError("the project has no annotator salt (migration m004_releases did not run)")
        return salt

    def pseudonyms(self) -> dict[str, str]:
        """Every account's id in a release: ``ann_<n>``, ``n`` its place in the order the accounts were
        made (then by name). It tells nothing about the name (no hash to test a guessed name against),
        never changes (accounts are never removed), and the same steps give the same ids in any project,
        so a release depends on what people decided, not on a random salt."""
        u = self.t["users"]
        with self.read() as conn:
            names = conn.execute(select(u.c.username).order_by(u.c.created_at, u.c.username)).scalars().all()
        return {name: f"ann_{n:03d}" for n, name in enumerate(names, start=1)}

    def pseudonym(self, username: str, salt: str | None = None, known: dict[str, str] | None = None) -> str:
        """``username``'s id in a release (:meth:`pseudonyms`; ``known`` is their mapping, when read
        already); a name with no account (none is, today) gets a keyed hash with the project's salt."""
        found = (self.pseudonyms() if known is None else known).get(username)
        if found:
            return found
        key = (salt or self.annotator_salt()).encode("utf-8")
        return "ann_" + hmac.new(key, username.encode("utf-8"), sha256).hexdigest()[:12]

    # -- provenance of released records -------------------------------------------------------------
    def offline_references(self) -> list[OfflineReference]:
        """Released records made by the offline backend."""
        p = self.t["provenance"]
        out: list[OfflineReference] = []
        with self.read() as conn:
            for table, key in RELEASED_TABLES.items():
                t = self.t[table]
                q = (
                    select(t.c[key], t.c.provenance_id)
                    .join(p, p.c.provenance_id == t.c.provenance_id)
                    .where(p.c.offline.is_(True))
                    .order_by(t.c[key])
                )
                out += [OfflineReference(table, str(r[0]), r[1]) for r in conn.execute(q)]
        return out

    def _hidden(self, table: str, conn):
        hide = getattr(self.core, "hidden", {}).get(table)
        return hide(conn) if hide else None

    def provenance_summary(self) -> ProvenanceSummary:
        """Models, prompt template hashes, sources with licences and the offline share of released records."""
        p, s = self.t["provenance"], self.t["sources"]
        per_prov: Counter[str] = Counter()
        with self.read() as conn:
            for table in RELEASED_TABLES:
                t = self.t[table]
                q = select(t.c.provenance_id, func.count()).group_by(t.c.provenance_id)
                if (hide := self._hidden(table, conn)) is not None:  # a bulk import still staging
                    q = q.where(hide)
                for prov_id, n in conn.execute(q):
                    per_prov[prov_id or ""] += n
            provs = {
                r["provenance_id"]: self.loads(r["record_json"]) for r in conn.execute(select(p)).mappings()
            }
            q = select(s.c.kind, s.c.sha256, s.c.rows, s.c.licence).order_by(s.c.kind, s.c.sha256)
            if (hide := self._hidden("sources", conn)) is not None:
                q = q.where(hide)
            sources = [SourceSummary(**r) for r in conn.execute(q).mappings()]
        total = sum(per_prov.values())
        offline = sum(n for pid, n in per_prov.items() if pid and provs.get(pid, {}).get("offline"))
        used = [provs[pid] for pid in sorted(per_prov) if pid in provs]
        stages: Counter[str] = Counter()
        for pid, n in per_prov.items():
            stages[provs[pid]["source"] if pid in provs else "unknown"] += n
        return ProvenanceSummary(
            records=total,
            offline_records=offline,
            offline_share=round(offline / total, 6) if total else 0.0,
            models=sorted({r["model"] for r in used if r.get("model")}),
            prompt_template_hashes=sorted(
                {r["prompt_template_hash"] for r in used if r.get("prompt_template_hash")}
            ),
            stages=dict(sorted(stages.items())),  # released records per pipeline stage / importer
            sources=sources,
            licences=sorted(
                {x.licence for x in sources if x.licence} | {r["licence"] for r in used if r.get("licence")}
            ),
        )

    def instance_json(self) -> list[tuple[str, str]]:
        """``(instance_id, record_json)`` of every CUPID instance in id order, unparsed: a release
        writes the stored canonical JSON as it is."""
        i = self.t["instances"]
        return [
            (r[0], r[1])
            for r in self.fetch_tuples(select(i.c.instance_id, i.c.record_json).order_by(i.c.instance_id))
        ]

    def packet_relpaths(self) -> dict[str, str]:
        """``{session_id: path the packet was imported from}`` for every AlpsBench packet, in one read."""
        p, d = self.t["packets"], self.t["dialogues"]
        q = select(p.c.session_id, d.c.meta_json).join(d, d.c.dialogue_id == p.c.dialogue_id)
        rows = self.fetch_tuples(q)
        return {sid: (self.loads(meta) or {}).get("relpath") or f"{sid}.json" for sid, meta in rows}

    # -- release log --------------------------------------------------------------------------------
    def record(self, release: ReleaseRecord) -> None:
        """Log a cut release."""
        r = self.t["releases"]
        with self.write() as conn:
            if conn.execute(select(r.c.version).where(r.c.version == release.version)).first():
                raise StoreError(f"release {release.version} is already recorded in the project")
            conn.execute(r.insert(), {f: getattr(release, f) for f in ReleaseRecord.__dataclass_fields__})

    def recorded(self) -> list[ReleaseRecord]:
        """Every cut release, oldest first."""
        r = self.t["releases"]
        return [ReleaseRecord(**x) for x in self.fetch(select(r).order_by(r.c.created_at))]
