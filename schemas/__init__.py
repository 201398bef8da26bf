"""prefkit's shared language: strict pydantic v2 contracts for every record that crosses a boundary.

``ALL_SCHEMAS`` maps each exported record type to its model; ``prefkit schema export`` writes their
JSON Schemas. Nothing here imports from the rest of prefkit.
"""

from prefkit.schemas.alpsbench import (
    DOCUMENTED_TIME_SCOPES,
    TAXONOMY,
    Evidence,
    ExtractedMemory,
    MemoryItem,
    check_candidate,
)
from prefkit.schemas.common import Contract, PrefkitError, Record, canonical_json, content_hash, utcnow
from prefkit.schemas.cupid import BenchmarkInstance, DialogueMessage, PriorInteraction
from prefkit.schemas.curation import (
    Adjudication,
    AnnotationTask,
    LabelEvent,
    Provenance,
    ReleaseFile,
    ReleaseManifest,
)
from prefkit.schemas.evaluation import AlpsPrediction, CupidLabelLine, CupidPrediction
from prefkit.schemas.generation import (
    ChecklistItem,
    ContextFactor,
    ContextualPreference,
    Persona,
    PersonaAttributes,
    Session,
    SessionPlan,
    SessionSlot,
    Turn,
)
from prefkit.schemas.wildchat import WildChatConversation, WildChatTurn

ALL_SCHEMAS: dict[str, type[Contract]] = {
    "Persona": Persona,
    "ContextFactor": ContextFactor,
    "ContextualPreference": ContextualPreference,
    "ChecklistItem": ChecklistItem,
    "SessionPlan": SessionPlan,
    "Turn": Turn,
    "Session": Session,
    "BenchmarkInstance": BenchmarkInstance,
    "MemoryItem": MemoryItem,
    "ExtractedMemory": ExtractedMemory,
    "WildChatConversation": WildChatConversation,
    "AnnotationTask": AnnotationTask,
    "LabelEvent": LabelEvent,
    "Adjudication": Adjudication,
    "Provenance": Provenance,
    "ReleaseManifest": ReleaseManifest,
    "CupidPrediction": CupidPrediction,
    "CupidLabelLine": CupidLabelLine,
    "AlpsPrediction": AlpsPrediction,
}

__all__ = [
    "ALL_SCHEMAS",
    "AlpsPrediction",
    "CupidLabelLine",
    "CupidPrediction",
    "DOCUMENTED_TIME_SCOPES",
    "TAXONOMY",
    "Adjudication",
    "AnnotationTask",
    "BenchmarkInstance",
    "ChecklistItem",
    "ContextFactor",
    "ContextualPreference",
    "Contract",
    "DialogueMessage",
    "Evidence",
    "ExtractedMemory",
    "LabelEvent",
    "MemoryItem",
    "Persona",
    "PersonaAttributes",
    "PrefkitError",
    "PriorInteraction",
    "Provenance",
    "Record",
    "ReleaseFile",
    "ReleaseManifest",
    "Session",
    "SessionPlan",
    "SessionSlot",
    "Turn",
    "WildChatConversation",
    "WildChatTurn",
    "canonical_json",
    "check_candidate",
    "content_hash",
    "utcnow",
]
