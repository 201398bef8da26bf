"""``preference_match`` in Label Studio: the checklist item and the candidate, one coverage choice
(keys 1 / 2 / 3 as in the guidelines)."""

from prefkit.annotate_app.labelstudio.config import ChoicesConfig, tag

CONFIG = ChoicesConfig(
    display=tag("Header", value="Checklist item", size="5")
    + tag("Text", name="checklist_item", value="$checklist_item")
    + tag("Header", value="Candidate preference", size="5")
    + tag("Text", name="candidate", value="$candidate"),
    data_keys=("checklist_item", "candidate"),
    to_name="candidate",
    prompts={"coverage": "How much of the checklist item does the candidate cover?"},
    hotkeys={"coverage": {"fully": "1", "partially": "2", "not_covered": "3"}},
)
