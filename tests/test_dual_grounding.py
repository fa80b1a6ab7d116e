"""OSCAR's dual grounding in the bundled orchestrator: a real GTK window under Xvfb with its accessibility tree, a
spawned server, and a stand-in planner over real HTTP that names elements by the numbers it is shown, with no
grounding model configured."""

from __future__ import annotations

import io
import re
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image, ImageChops

from symphony_mcp.orchestrator.api import run_task
from symphony_mcp.orchestrator.checker import CommandChecker
from symphony_mcp.orchestrator.report import write_report
from testkit.desktop_apps import ProbeApp, gtk_probe
from testkit.model_server import ModelRequest, StandInModel
from testkit.scripted_planner import PLANNER, Script, act, numbered, settings_for

pytestmark = pytest.mark.anyio
TYPED = "Grüße, 世界 ✓"


def _mark_red(pixel: Any) -> bool:
    """vision/annotate.py's label colour (230, 20, 60) as it survives the planner's JPEG: red well above the rest."""
    red, green, blue = pixel
    return bool(red >= 140 and red - green >= 80 and red - blue >= 60)


@pytest.fixture
def gtk(xdisplay: Any, tmp_path: Path) -> Iterator[ProbeApp]:
    with gtk_probe(tmp_path, "Dual Probe") as app:
        yield app


def checker_for(app: ProbeApp) -> CommandChecker:
    """The probe's own state says whether the field holds the text and ONE was pressed once."""
    check = (
        "import json, sys; s = json.load(open(sys.argv[1], encoding='utf-8'));"
        f"sys.exit(0 if s['entry'] == {TYPED!r} and s['clicks'] == {{'Save file': 0, 'Cancel': 0, 'ONE': 1}} else 1)"
    )
    return CommandChecker(shlex.join([sys.executable, "-c", check, str(app.state_file)]))


async def test_the_planner_names_elements_by_number_and_solves_the_task(
    gtk: ProbeApp, stand_in: StandInModel, tmp_path: Path
) -> None:
    script = Script(
        {
            1: [lambda r: act(f"type(element={numbered(r, 'Search box')}, text={TYPED!r}, overwrite=True)")],
            2: [lambda r: act(f"click(element={numbered(r, 'ONE')})")],
            3: [act("done()")],
        }
    )
    stand_in.script(default=script)
    settings = settings_for(stand_in, tmp_path / "results", max_steps=5, dual_grounding=True)
    assert settings.models.grounder.base_url is None  # no grounding endpoint: ids and coordinates only

    outcome = await run_task(
        "Type the greeting into the Search box, then press ONE",
        settings=settings,
        task_id="dual",
        checker=checker_for(gtk),
    )

    assert outcome.outcome == "success", outcome.record.message
    state = gtk.state()
    assert state["entry"] == TYPED and state["clicks"]["ONE"] == 1
    record = outcome.record
    assert [s.action.arguments.get("element") is not None for s in record.steps if s.action] == [True, True, False]
    # What the planner was shown: element numbers in its instructions and actions, no descriptions to ground.
    first = script.planner_requests[0]
    system = first.messages[0]["content"]
    assert "click(element=12)" in system and "element: int" in system and "description:" not in system
    listing = first.texts()[-1]
    assert listing.startswith("Elements, numbered as in the screenshot") and '"Save file"' in listing
    assert all(r.body["model"] == PLANNER for r in script.planner_requests)
    # The marked screenshot the planner saw is kept in the task folder, byte for byte what it got, and has marks.
    marks = outcome.directory / str(record.steps[0].marks_file)
    seen = first.images()[-1].convert("RGB")
    kept = Image.open(io.BytesIO(marks.read_bytes())).convert("RGB")
    assert ImageChops.difference(seen, kept).getbbox() is None
    assert record.steps[0].elements == listing.split("\n", 1)[1]
    left, top = map(int, re.search(r'"ONE" @\d+,\d+ box (\d+),(\d+) ', listing).groups())  # type: ignore[union-attr]
    label = [kept.getpixel((x, y)) for x in range(left, left + 4) for y in range(top - 5, top - 1)]
    assert sum(_mark_red(p) for p in label) >= len(label) // 2, label  # ONE's number above its box
    # The report shows those marks and the list for each step.
    page = (write_report(tmp_path / "results").parent / "dual.html").read_text(encoding="utf-8")
    for step in record.steps:
        assert re.search(rf'<img src="[^"]*/{step.marks_file}" alt="elements numbered as the planner saw them', page)
    assert "Elements listed to the planner" in page and "Save file" in page


async def test_without_dual_grounding_element_ids_are_not_offered(
    xdisplay: Any, stand_in: StandInModel, tmp_path: Path
) -> None:
    def refused(request: ModelRequest) -> str:
        return act("click(element=1)")

    script = Script({1: [refused, refused, refused, refused], 2: [act('fail(reason="no ids")')]})
    stand_in.script(default=script)
    settings = settings_for(stand_in, tmp_path / "results", max_steps=2, reflection=False)
    outcome = await run_task("Press ONE", settings=settings, task_id="plain")

    assert outcome.outcome == "fail"
    assert len(outcome.record.steps[0].rejected_outputs) == 4  # every answer naming an element was refused
    reask = str(script.planner_requests[1].messages[-1]["content"])
    assert "click() has no parameter 'element'" in reask
    assert "Elements, numbered" not in "\n".join(script.planner_requests[0].texts())
    assert outcome.record.steps[0].marks_file is None
