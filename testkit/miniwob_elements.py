"""A model-free MiniWoB++ policy that acts by element id: a stand-in planner (answer function for
testkit/model_server.py) for the orchestrator under dual grounding, solving every task of the default subset.

It reads only what a planner gets: the task's utterance and the numbered element list of the current step
(`[12] push button "Submit" ...`, read from Chromium's accessibility tree by the server's `elements`). Each action
names an element by the id that step's list gives it; no coordinates, no OCR, no DOM. Per task, the actions in
order (a step's target is looked up in that step's own list, as ids hold for one frame only):

    click-button      click the button named as asked
    click-link        click the text that is exactly the link asked for (MiniWoB's links are spans)
    click-test(-2)    click the (named) button
    click-option      click the radio button, then Submit
    click-checkboxes  click each check box asked for, then Submit
    choose-list       open the list box, click the option (or type its name and Enter when the open list does
                      not show it), then Submit
    enter-text        type into the field, then Submit
    enter-password    type into both password fields, then Submit
    focus-text        click the field
    login-user        type the username and the password into their fields, then Login
    navigate-tree     click the name asked for once listed; until then open the next folder

Once the list shows MiniWoB's START cover, the episode is over: done.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from testkit.model_server import ModelRequest
from testkit.scripted_planner import act, step_of

LISTING_HEADING = "Elements, numbered as in the screenshot"
# navigate-tree: a file is a list item with its name; a folder's item holds its opener and a span with its name,
# which the tree lists as a section (the names are capitalised first names). At most 8 files and folders.
_FOLDER = re.compile(r"[A-Z][a-z]+")
MAX_FOLDERS = 8
_LINE = re.compile(
    r'^\[(?P<id>\d+)\] (?P<role>.+?)(?= "| text=| \(| @)(?: "(?P<name>[^"]*)")?(?: text="(?P<text>[^"]*)")?'
)


@dataclass(frozen=True)
class Listed:
    """One line of the element list."""

    id: int
    role: str
    name: str
    text: str
    line: str

    @property
    def label(self) -> str:
        return self.name or self.text


Step = Callable[[list["Listed"]], str]  # the step's element list -> the action


def elements_planner(request: ModelRequest) -> str:
    """The next action for the task and step the request is about."""
    utterance, step = _task(request), step_of(request)
    script, listed = _script(utterance), listing(request)
    if step > len(script) or any(e.label == "START" for e in listed):  # MiniWoB's cover: the episode is over
        return act("done()")
    return act(script[step - 1](listed))


def listing(request: ModelRequest) -> list[Listed]:
    """The current step's element list (the last one in the request)."""
    text = next(t for t in reversed(request.texts()) if t.startswith(LISTING_HEADING))
    found = []
    for line in text.splitlines()[1:]:
        if match := _LINE.match(line):
            found.append(Listed(int(match["id"]), match["role"], match["name"] or "", match["text"] or "", line))
    return found


def _script(utterance: str) -> list[Step]:
    if match := re.fullmatch(r'Click on the "(.+)" button\.', utterance):
        return [_click(match[1], roles=("push button",))]
    if match := re.fullmatch(r'Click on the link "(.+)"\.', utterance):
        return [_click(match[1], roles=("link", "section", "static"))]
    if utterance == "Click the button.":
        return [_click_role("push button")]
    if match := re.fullmatch(r"Click button (ONE|TWO)\.", utterance):
        return [_click(match[1], roles=("push button",))]
    if match := re.fullmatch(r"Select (.+) from the list and click Submit\.", utterance):
        return [_click_role("combo box"), _choose(match[1]), _click("Submit", roles=("push button",))]
    if match := re.fullmatch(r"Select (.+) and click Submit\.", utterance):
        # click-option and click-checkboxes say it alike: the list tells a radio button from a check box
        choices = [_click(name, roles=("radio button", "check box")) for name in _names(match[1])]
        return [*choices, _click("Submit", roles=("push button",))]
    if match := re.fullmatch(r'Enter "(.*)" into the text field and press Submit\.', utterance):
        return [_type_into("entry", 0, match[1]), _click("Submit", roles=("push button",))]
    if match := re.fullmatch(r'Enter the password "(.*)" into both text fields and press submit\.', utterance):
        return [
            _type_into("password text", 0, match[1]),
            _type_into("password text", 1, match[1]),
            _click("Submit", roles=("push button",)),
        ]
    if utterance == "Focus into the textbox.":
        return [_click_role("entry")]
    if match := re.fullmatch(
        r'Enter the username "(.*)" and the password "(.*)" into the text fields and press login\.', utterance
    ):
        return [
            _type_into("entry", 0, match[1]),
            _type_into("password text", 0, match[2]),
            _click("Login", roles=("push button",)),
        ]
    if match := re.fullmatch(
        r'Navigate through the file tree\. Find and click on the folder or file named "(.+)"\.', utterance
    ):
        return [_navigate(match[1], opened) for opened in range(MAX_FOLDERS + 1)]
    return [lambda _listed: f"fail(reason={'no script for: ' + utterance!r})"]


def _names(phrase: str) -> list[str]:
    """click-checkboxes' 'A, B, C' (or 'nothing') -> the names."""
    return [] if phrase == "nothing" else phrase.split(", ")


def _click(name: str, roles: tuple[str, ...]) -> Step:
    def step(listed: list[Listed]) -> str:
        found = _exactly(listed, name, roles)
        if not found:
            return f"fail(reason={f'no {roles[0]} named {name!r} listed'!r})"
        return f"click(element={found[0].id})"

    return step


def _exactly(listed: list[Listed], name: str, roles: tuple[str, ...]) -> list[Listed]:
    """The elements of one of `roles` labelled exactly `name`, in the order of `roles`."""
    return sorted(
        (e for e in listed if e.role in roles and e.label == name),
        key=lambda e: roles.index(e.role),
    )


def _click_role(role: str) -> Step:
    def step(listed: list[Listed]) -> str:
        found = [e for e in listed if e.role == role]
        return f"click(element={found[0].id})" if found else f"fail(reason={f'no {role} listed'!r})"

    return step


def _type_into(role: str, index: int, text: str) -> Step:
    def step(listed: list[Listed]) -> str:
        fields = [e for e in listed if e.role == role]
        if len(fields) <= index:
            return f"fail(reason={f'{index + 1} {role} fields not listed'!r})"
        return f"type(element={fields[index].id}, text={text!r}, overwrite=True)"

    return step


def _choose(option: str) -> Step:
    def step(listed: list[Listed]) -> str:
        found = _exactly(listed, option, ("menu item", "list item", "option"))
        return f"click(element={found[0].id})" if found else f"type(text={option!r}, enter=True)"

    return step


def _navigate(name: str, opened: int) -> Step:
    """Click `name` once listed; until then open the next folder (the `opened`-th in reading order). Opening a
    folder lists its content right after it, so folders are opened depth first and none twice."""

    def step(listed: list[Listed]) -> str:
        found = _exactly(listed, name, ("list item", "section", "static"))
        if found:
            return f"click(element={found[0].id})"
        folders = [e for e in listed if e.role == "section" and _FOLDER.fullmatch(e.label)]
        if len(folders) <= opened:
            return f"fail(reason={f'{name!r} is in none of the folders'!r})"
        return f"click(element={folders[opened].id})"

    return step


def _task(request: ModelRequest) -> str:
    for text in request.texts():
        if match := re.search(r"^Task: (.+)$", text, re.MULTILINE):
            return match[1].strip()
    raise AssertionError("no task in the planner request")
