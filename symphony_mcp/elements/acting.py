"""Acting on an element named by id: through its accessibility action where it has one, else with the pointer.

The accessibility action needs no pointer and no focus, and cannot land on the wrong pixel; it is used only for
the plain case it equals (a single left click: press; typing: set the text), anything else goes through the
pointer at the element's centre. The action record's grounding says which was used and why.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from symphony_mcp.desktop.actions import DesktopActions
from symphony_mcp.desktop.frames import CallerSpace
from symphony_mcp.desktop.records import ActionRecord, Grounding, Target
from symphony_mcp.desktop.types import MouseButton
from symphony_mcp.elements.reader import ElementReader, Resolved

# Actions that press a control, in the order tried; toolkits name them differently (Qt says "Press", GTK "click").
# The one list: the helper is given it with each press (it runs under the system Python and cannot import this).
PRESS_ACTIONS = ("click", "press", "activate", "jump", "toggle")


class ElementActions:
    def __init__(self, reader: ElementReader, actions: DesktopActions) -> None:
        self.reader = reader
        self.actions = actions

    async def target(self, view: CallerSpace, element_id: int, via: str = "pointer at its centre") -> Target:
        """Where the pointer acts on an element: its centre, checked live."""
        return _target(await self.reader.resolve(view, element_id), view, via)

    async def click(
        self,
        view: CallerSpace,
        element_id: int,
        *,
        button: MouseButton = "left",
        count: int = 1,
        hold_keys: Sequence[str] = (),
    ) -> ActionRecord:
        resolved = await self.reader.resolve(view, element_id)
        element = resolved.element
        pressable = [a for a in element.actions if a.lower() in PRESS_ACTIONS]
        if button != "left" or count != 1 or hold_keys:
            why = "a right, middle, repeated or modified click has no accessibility action"
        elif not pressable:
            why = f"it offers no press action ({', '.join(element.actions) or 'no actions'})"
        else:
            started = time.time()
            outcome = await self.reader.act(resolved, "press", names=PRESS_ACTIONS)
            if outcome["done"]:
                via = f"accessibility action {outcome['action']!r}"
                return await self.actions.recorder.record(
                    "click",
                    {"element": element_id, "space": view.space, "frame_id": view.frame_id},
                    f"pressed element {element_id} ({element.role} {element.name!r}) by its {via}",
                    started,
                    targets=[_target(resolved, view, via)],
                )
            why = outcome["why"]
        target = _target(resolved, view, f"pointer at its centre: {why}")
        return await self.actions.click(target, view, button=button, count=count, hold_keys=hold_keys)

    async def type_text(
        self, view: CallerSpace, element_id: int, text: str, *, overwrite: bool = False, enter: bool = False
    ) -> ActionRecord:
        """Set (overwrite) or extend the element's text through accessibility; with enter, or where it cannot,
        click it and type."""
        resolved = await self.reader.resolve(view, element_id)
        element = resolved.element
        if enter or "\n" in text:
            why = "Enter (or a line break) is a key press, which has no accessibility action"
        elif "editable" not in element.states:
            why = "its text is not editable through accessibility"
        else:
            started = time.time()
            kind = "set_text" if overwrite else "append_text"
            outcome = await self.reader.act(resolved, kind, text)
            if outcome["done"]:
                via = f"accessibility action {kind!r}"
                shown = text if len(text) <= 60 else text[:57] + "..."
                return await self.actions.recorder.record(
                    "type",
                    {"text": text, "overwrite": overwrite, "enter": enter, "element": element_id,
                     "space": view.space, "frame_id": view.frame_id},
                    f"{'set' if overwrite else 'appended'} {shown!r} {'as' if overwrite else 'to'} the text of "
                    f"element {element_id} ({element.role} {element.name!r}) by its {via}",
                    started,
                    targets=[_target(resolved, view, via)],
                )  # fmt: skip
            why = outcome["why"]
        target = _target(resolved, view, f"pointer at its centre, then keys: {why}")
        return await self.actions.type_text(text, view, overwrite=overwrite, enter=enter, target=target)


def _target(resolved: Resolved, view: CallerSpace, via: str) -> Target:
    element = resolved.element
    grounding = Grounding(
        method="element",
        query=f"element {element.id}",
        matched_text=element.name or element.text or None,
        box=element.box,
        via=via,
    )
    return Target(element.center, None, (grounding,))
