"""The planner's prompt (orchestrator/prompts.py): the history's text and its image budget."""

from __future__ import annotations

from symphony_mcp.models.messages import ModelImage
from symphony_mcp.orchestrator.prompts import StepContext, Turn, build_messages


def _image(tag: int) -> ModelImage:
    return ModelImage(data=bytes([tag]), format="jpeg", width=10, height=10, content_width=10, content_height=10)


def test_history_keeps_all_text_and_at_most_max_images_with_the_first() -> None:
    history = [Turn(step=n, image=_image(n), answer=f"answer {n}") for n in range(1, 13)]
    context = StepContext(step=13, max_steps=20, instruction="task", image=_image(13))
    messages = build_messages("actions", context, history, max_images=4, keep_first=True)
    shown = [m for m in messages if isinstance(m.content, list) and any(p.type == "image_url" for p in m.content)]
    texts = [m.content if isinstance(m.content, str) else m.content[0].text for m in shown]  # type: ignore[union-attr]
    assert texts[:3] == ["Step 1. Screenshot:", "Step 11. Screenshot:", "Step 12. Screenshot:"]
    assert len(shown) == 4  # first + the two newest + the current one
    assert [m.content for m in messages if m.role == "assistant"] == [f"answer {n}" for n in range(1, 13)]
    assert "Task: task" in str(messages[-1].content) and str(messages).count("Task: task") == 1
    without_first = build_messages("actions", context, history, max_images=4, keep_first=False)
    assert "Step 1. (screenshot omitted)" in str(without_first)
