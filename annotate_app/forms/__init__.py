"""One form module per task kind: ``render`` (annotate an item) and ``edit`` (change an earlier label)."""

from annotate_app.forms import expressed, match, memory, task_qc

FORMS = {
    "preference_expressed": expressed,
    "preference_match": match,
    "memory_verify": memory,
    "task_qc": task_qc,
}
