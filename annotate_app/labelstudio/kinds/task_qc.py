"""``task_qc`` in Label Studio: the generated text, its memory and gold answer; two verdicts."""

from prefkit.annotate_app.labelstudio.config import ChoicesConfig, tag

CONFIG = ChoicesConfig(
    display=tag("Header", value="$question", size="6")
    + tag("Header", value="Generated", size="5")
    + tag("Text", name="generated", value="$generated")
    + tag("Header", value="Memory", size="5")
    + tag("Text", name="memory", value="$memory")
    + tag("Header", value="Gold answer", size="5")
    + tag("Text", name="gold_answer", value="$gold_answer"),
    data_keys=("question", "generated", "memory", "gold_answer"),
    to_name="generated",
    prompts={},
    hotkeys={"leakage": {"none": "1", "leaks": "2"}, "answer": {"correct": "3", "incorrect": "4"}},
)
