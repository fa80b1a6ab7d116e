"""A scripted MiniWoB++ policy for smoke runs: a stand-in planner (answer function for testkit/model_server.py) that
solves a few tasks through the server's tools on screen, and one that fails on purpose.

It reads only what a planner gets: the task's utterance from the prompt and the current screenshot. Buttons and
links are clicked by their text with `click_text` (the server's OCR, deterministic, no grounding model), fields are
reached with Tab and typed into with `type`. Nothing reads the page's DOM.

    click-button  'Click on the "okay" button.'        click_text("okay") below the yellow query box, done
    click-test    'Click the button.'                   click_text("Click Me!"), a click on the START cover MiniWoB
                                                        shows after an episode (its reward must stay), done
    enter-text    'Enter "Agustina" into the text ...'  Tab, type("Agustina"), click_text("Submit"), done
    click-test-2  'Click button ONE.'                   the scripted failure: clicks the other button, done

The START cover is clicked at its centre as found in the screenshot: the server's OCR does not read its light text
on black (click_text("START") answered "'START' is not on screen").
"""

from __future__ import annotations

import re
from collections.abc import Callable

from PIL import Image

from testkit.model_server import ModelRequest

SOLVED = ("click-button", "click-test", "enter-text")  # the tasks `smoke_planner` solves
FAILED = "click-test-2"  # the task it fails on purpose (clicks the wrong button)


def act(code: str, note: str = "Do the next thing.") -> str:
    """A planner answer in the orchestrator's required format."""
    return (
        "(Previous action verification)\nFine.\n(Screenshot analysis)\nThe MiniWoB task.\n"
        f"(Next action)\n{note}\n(Grounded action)\n```python\n{code}\n```"
    )


def smoke_planner(request: ModelRequest) -> str:
    """The next action for the task and step the request is about."""
    utterance, step = _task(request), _step(request)
    script = _script(utterance)
    if step > len(script):
        return act("done()")
    action = script[step - 1]
    return act(action(request.images()[-1]) if callable(action) else action)


def _script(utterance: str) -> list[str | Callable[[Image.Image], str]]:
    """The task's actions in order; an action that depends on the screen is a function of the screenshot."""
    if match := re.fullmatch(r'Click on the "(.+)" button\.', utterance):
        label = match[1]
        return [lambda screenshot: f"click_text(phrase={label!r}, region={below_query(screenshot)!r})", "done()"]
    if utterance == "Click the button.":  # then a click on MiniWoB's START cover, which must not start a new episode
        return [
            'click_text(phrase="Click Me!")',
            lambda screenshot: "click(x={}, y={})".format(*cover(screenshot)),
            "done()",
        ]
    if match := re.fullmatch(r'Enter "(.+)" into the text field and press Submit\.', utterance):
        return ['hotkey(keys=["tab"])', f"type(text={match[1]!r})", 'click_text(phrase="Submit")', "done()"]
    if match := re.fullmatch(r"Click button (ONE|TWO)\.", utterance):
        wrong = "TWO" if match[1] == "ONE" else "ONE"
        return [f"click_text(phrase={wrong!r})", "done()"]
    return [f"fail(reason={'no script for: ' + utterance!r})"]


def below_query(screenshot: Image.Image) -> dict[str, int]:
    """The screenshot's area below MiniWoB's yellow query box (so a phrase is not found in the instruction)."""
    rgb = screenshot.convert("RGB")
    bottom = 0
    while bottom < rgb.height and _yellow(rgb.getpixel((2, bottom))):
        bottom += 1
    if bottom == 0:
        raise AssertionError("no MiniWoB query box at the screenshot's top left")
    return {"left": 0, "top": bottom, "width": rgb.width, "height": rgb.height - bottom}


def cover(screenshot: Image.Image) -> tuple[int, int]:
    """The centre of MiniWoB's dark START cover at the screenshot's top left."""
    rgb = screenshot.convert("RGB")
    width = height = 0
    while width < rgb.width and _dark(rgb.getpixel((width, 2))):
        width += 1
    while height < rgb.height and _dark(rgb.getpixel((2, height))):
        height += 1
    if not width or not height:
        raise AssertionError("no START cover at the screenshot's top left")
    return width // 2, height // 2


def _dark(pixel: object) -> bool:
    assert isinstance(pixel, tuple)
    return max(pixel[:3]) < 60


def _yellow(pixel: object) -> bool:
    """MiniWoB's instruction box colour (#FF0), give or take JPEG's error."""
    assert isinstance(pixel, tuple)
    red, green, blue = pixel[:3]
    return red > 220 and green > 220 and blue < 60


def _task(request: ModelRequest) -> str:
    for text in request.texts():
        if match := re.search(r"^Task: (.+)$", text, re.MULTILINE):
            return match[1].strip()
    raise AssertionError("no task in the planner request")


def _step(request: ModelRequest) -> int:
    for text in reversed(request.texts()):
        if match := re.search(r"Step (\d+) of \d+\.", text):
            return int(match.group(1))
    raise AssertionError("no step number in the planner request")
