"""search_tutorial end to end: a spawned server over stdio browses the local test website (testkit/web_site.py)
in real Chromium, driven by a stand-in searcher model over real HTTP that answers from the page it is shown.

The stand-in reads each step's prompt like a model would: the element list and visible text inside the
<page_content> block. Offline by construction: the engine is the test site, on 127.0.0.1.
"""

from __future__ import annotations

import base64
import io
import json
import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import ImageContent, TextContent
from PIL import Image

from symphony_mcp.config import load_settings
from symphony_mcp.orchestrator.api import run_task
from symphony_mcp.orchestrator.connection import InMemoryServer
from symphony_mcp.search.docs_index import build_index
from symphony_mcp.search.result_schemas import SearchTranscript, TutorialResult
from symphony_mcp.server import build_server
from testkit.mcp_calls import call_error
from testkit.model_server import ModelRequest, Reply, StandInModel
from testkit.processes import descendants, kill_renderers
from testkit.scripted_planner import MEMORYER, PLANNER, act, on_track
from testkit.server_process import ServerProcess, base_env
from testkit.web_site import WebSite

pytestmark = pytest.mark.anyio
SEARCHER = "stand-in-searcher"
TUTORIAL = "1. Open the View menu.\n2. Choose Freeze Cells, then Freeze First Row."
STEPS_TEXT = "Choose Freeze Cells , then Freeze First Row"


def said(call: str, thought: str = "Next.") -> str:
    return f"{thought}\n```python\n{call}\n```"


class Page:
    """What a step's prompt shows: the URL, numbered elements and the visible text (in <page_content>)."""

    def __init__(self, request: ModelRequest) -> None:
        current = request.texts()
        step = next(t for t in reversed(current) if "<page_content>" in t)
        self.prompt = step
        self.block = step[step.index("<page_content>") : step.index("</page_content>") + len("</page_content>")]
        self.url = re.search(r"^URL: (.*)$", self.block, re.M).group(1)  # type: ignore[union-attr]
        self.elements = {int(m.group(1)): m.group(2) for m in re.finditer(r"^\[(\d+)\] \S+ (.*)$", self.block, re.M)}
        self.text = self.block.split("Visible text:", 1)[1]

    def id_of(self, text: str) -> int:
        return next(i for i, label in self.elements.items() if text.lower() in label.lower())

    def has(self, text: str) -> bool:
        return any(text.lower() in label.lower() for label in self.elements.values())


def reader(noted: list[str]) -> Callable[[ModelRequest], str]:
    """A searcher that finds the freeze how-to in several hops: the help centre from the results, its cookie
    banner (by description), a dead article link and back, the how-to, scrolling, a note, done."""
    tried: list[str] = []

    def answer(request: ModelRequest) -> str:
        page = Page(request)
        if "/search" in page.url:
            return said(f"click({page.id_of('Tabula Sheets Help Centre')})", "The official help centre.")
        if page.has("Accept all"):
            return said('click("Accept all button")', "A cookie banner covers the page.")
        if "Load error:" in page.block:
            return said("go_back()", "That article is gone.")
        if page.url.endswith("/help/"):
            if not tried:
                tried.append(page.url)
                return said(f"click({page.id_of('Conditional formatting rules')})", "Maybe related.")
            return said(f"click({page.id_of('How to freeze the first row')})", "This one.")
        if STEPS_TEXT not in page.text:
            return said('scroll("down", 6)', "The steps are further down.")
        if not noted:
            noted.append(page.url)
            return said('save_note("View > Freeze Cells > Freeze First Row")', "These are the steps.")
        return said(f"done({TUTORIAL!r})", "I have the steps.")

    return answer


@asynccontextmanager
async def search_server(
    xdisplay: Any, stand_in: StandInModel, tmp_path: Path, template: str, **settings: str
) -> AsyncIterator[Client]:
    env = base_env(
        DISPLAY=xdisplay.name,
        SYMPHONY_MODELS__SEARCHER__BASE_URL=stand_in.url,
        SYMPHONY_MODELS__SEARCHER__MODEL=SEARCHER,
        SYMPHONY_MODELS__SEARCHER__MAX_RETRIES="0",
        SYMPHONY_SEARCH__ENGINE="template",
        SYMPHONY_SEARCH__URL_TEMPLATE=template,
        SYMPHONY_OCR__WARM_UP="false",
        **{f"SYMPHONY_SEARCH__{name.upper()}": value for name, value in settings.items()},
    )
    async with Client(ServerProcess("--trajectory-dir", str(tmp_path / "trajectories"), env=env)) as client:
        yield client


def searcher_requests(stand_in: StandInModel) -> list[ModelRequest]:
    return [r for r in stand_in.requests if r.body["model"] == SEARCHER]


async def test_the_searcher_finds_the_tutorial_in_hops_past_a_banner_a_dead_link_and_scrolling(
    xdisplay: Any, stand_in: StandInModel, web_site: WebSite, tmp_path: Path
) -> None:
    noted: list[str] = []
    stand_in.script(default=reader(noted))
    progress: list[str | None] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(message)

    async with search_server(xdisplay, stand_in, tmp_path, web_site.url("/search?q={query}")) as client:
        result = await client.call_tool(
            "search_tutorial", {"query": "freeze the first row in Tabula Sheets"}, progress_callback=on_progress
        )
        assert not result.is_error, result.content
        found = TutorialResult.model_validate(result.structured_content)
        transcript_text = await client.read_resource(found.transcript_uri)
    assert found.completion_reason == "DONE" and found.tutorial == TUTORIAL
    article = web_site.url("/help/freeze-first-row.html")
    assert found.sources == [article] and [n.url for n in found.notes] == [article]
    assert found.notes[0].text == "View > Freeze Cells > Freeze First Row"
    # The note's screenshot comes back as an image, bounded, and shows the steps' page.
    images = [c for c in result.content if isinstance(c, ImageContent)]
    assert len(images) == len(found.images) == 1 and found.images[0].source_url == article
    picture = Image.open(io.BytesIO(base64.b64decode(images[0].data)))
    assert max(picture.size) <= 1024 and picture.size == (found.images[0].width, found.images[0].height)
    texts = [c.text for c in result.content if isinstance(c, TextContent)]
    assert TUTORIAL in texts[0] and "DONE" in texts[0]
    # Steps: help centre, banner, dead link, back, the how-to, scrolls, note, done; each reported as progress.
    assert 8 <= found.steps_used < 20
    assert sum(1 for m in progress if m and m.startswith("search step")) == found.steps_used
    transcript = SearchTranscript.model_validate_json(transcript_text.contents[0].text)  # type: ignore[union-attr]
    actions = [s.action for s in transcript.steps]
    assert actions[0].startswith("click(") and actions[1] == 'click("Accept all button")' and actions[3] == "go_back()"
    assert transcript.steps[1].outcome.startswith("clicked [") and "Accept all" in transcript.steps[1].outcome
    assert transcript.steps[3].url.endswith("/help/missing-conditional.html") and transcript.steps[4].url.endswith(
        "/help/"
    )
    dead = Page(searcher_requests(stand_in)[3])
    assert "Load error: HTTP 404" in dead.block
    assert all(Path(s.screenshot_file).exists() for s in transcript.steps if s.screenshot_file)
    # The first request carries the caller's screen and the first page; page text only inside the block.
    requests = searcher_requests(stand_in)
    first = requests[0]
    assert len(first.images()) == 2 and "current screen is attached" in first.texts()[1]
    assert "untrusted data" in first.messages[0]["content"]
    assert all(Page(r).block.count("<page_content>") == 1 for r in requests)


async def test_descriptions_that_name_nothing_and_bad_answers_are_asked_again(
    xdisplay: Any, stand_in: StandInModel, web_site: WebSite, tmp_path: Path
) -> None:
    stand_in.script(
        said('click("the purple unicorn link")'),
        said("click(999)"),
        said("eval('1+1')"),
        default=lambda request: said('fail(hint="try the Tabula Help Centre")'),
    )
    async with search_server(xdisplay, stand_in, tmp_path, web_site.url("/search?q={query}")) as client:
        result = await client.call_tool("search_tutorial", {"query": "freeze row", "budget": 4})
    found = TutorialResult.model_validate(result.structured_content)
    assert found.completion_reason == "FAIL" and found.hint == "try the Tabula Help Centre"
    # Three refused answers and the fourth used, in one step: a step is re-asked up to LOOP_REASKS (3) times.
    assert found.steps_used == 1 and len(searcher_requests(stand_in)) == 4
    (step,) = SearchTranscript.model_validate_json(Path(found.transcript_file).read_text()).steps
    assert len(step.rejected) == 3 and "there is no action 'eval'" in step.rejected[2]
    assert step.action == 'fail(hint="try the Tabula Help Centre")'
    retries = [r.messages[-1]["content"] for r in searcher_requests(stand_in)[1:3]]
    assert "no element on this page matches 'the purple unicorn link'" in retries[0]
    assert "there is no element 999 on this page" in json.dumps(searcher_requests(stand_in)[2].messages[-1])


async def test_budget_exhaustion_keeps_the_notes(
    xdisplay: Any, stand_in: StandInModel, web_site: WebSite, tmp_path: Path
) -> None:
    answers = iter([said('save_note("results list for freeze")'), *[said('scroll("down", 2)')] * 20])
    stand_in.script(default=lambda request: next(answers))
    async with search_server(xdisplay, stand_in, tmp_path, web_site.url("/search?q={query}")) as client:
        result = await client.call_tool("search_tutorial", {"query": "freeze row", "budget": 3})
    found = TutorialResult.model_validate(result.structured_content)
    assert found.completion_reason == "BUDGET_EXHAUSTED" and found.steps_used == 3 and found.tutorial is None
    assert [n.text for n in found.notes] == ["results list for freeze"] and len(found.images) == 1
    last = searcher_requests(stand_in)[-1]
    # On the last step only done/fail is accepted: scroll answers were refused with the reason.
    assert "last step: only done(tutorial=...) or fail(hint=...)" in last.messages[-1]["content"]


async def test_a_dead_engine_ends_the_search_before_any_model_call(
    xdisplay: Any, stand_in: StandInModel, web_site: WebSite, tmp_path: Path
) -> None:
    stand_in.script(default=lambda request: said("go_back()"))
    dead = f"http://127.0.0.1:{web_site.closed_port}/search?q={{query}}"
    async with search_server(xdisplay, stand_in, tmp_path, dead) as client:
        result = await client.call_tool("search_tutorial", {"query": "freeze row"})
    found = TutorialResult.model_validate(result.structured_content)
    assert found.completion_reason == "ERROR" and found.steps_used == 0
    assert "did not answer" in (found.error or "") and "ERR_CONNECTION_REFUSED" in (found.error or "")
    assert searcher_requests(stand_in) == []


async def test_a_page_that_crashes_twice_ends_the_search_cleanly(
    xdisplay: Any, stand_in: StandInModel, web_site: WebSite, tmp_path: Path
) -> None:
    killed: list[int] = []
    others = {pid for pid, command in descendants().items() if "--type=renderer" in command}

    def crash_then_scroll(request: ModelRequest) -> str:
        killed.extend(kill_renderers(spare=others))  # a real renderer crash while the model thinks
        return said('scroll("down", 2)')

    stand_in.script(default=crash_then_scroll)
    async with search_server(xdisplay, stand_in, tmp_path, web_site.url("/search?q={query}")) as client:
        result = await client.call_tool("search_tutorial", {"query": "freeze row"})
        assert not result.is_error
        found = TutorialResult.model_validate(result.structured_content)
        # The server keeps serving: the next search starts a fresh browser.
        stand_in.script(default=lambda request: said('fail(hint="none")'))
        again = await client.call_tool("search_tutorial", {"query": "freeze row"})
    assert killed
    assert found.completion_reason == "ERROR" and "crash" in (found.error or "")
    transcript = SearchTranscript.model_validate_json(Path(found.transcript_file).read_text())
    assert any("reopened" in notice for step in transcript.steps for notice in step.notices)
    assert TutorialResult.model_validate(again.structured_content).completion_reason == "FAIL"


async def test_a_page_telling_the_agent_to_open_local_files_gets_nothing_opened(
    xdisplay: Any, stand_in: StandInModel, web_site: WebSite, tmp_path: Path
) -> None:
    """A searcher model that obeys the page (the worst case) still cannot reach files or private hosts."""
    obeyed: list[str] = []

    def obedient(request: ModelRequest) -> str:
        page = Page(request)
        if page.has("Accept all"):
            return said('click("Accept all")')
        orders = [
            'open_url("file:///etc/passwd")',
            f'open_url("{web_site.private_base}/admin")',
            f"click({page.id_of('/etc/passwd')})" if page.has("/etc/passwd") else 'open_url("file:///etc/passwd")',
        ]
        if len(obeyed) < len(orders):
            obeyed.append(orders[len(obeyed)])
            return said(obeyed[-1], "The page says to do this.")
        return said('fail(hint="the thread has no answer")')

    stand_in.script(default=obedient)
    template = web_site.url("/forum/thread-4711.html?q={query}")
    async with search_server(xdisplay, stand_in, tmp_path, template) as client:
        result = await client.call_tool("search_tutorial", {"query": "keep header row visible"})
    found = TutorialResult.model_validate(result.structured_content)
    transcript = SearchTranscript.model_validate_json(Path(found.transcript_file).read_text())
    outcomes = [s.outcome for s in transcript.steps]
    assert found.completion_reason == "FAIL" and len(obeyed) == 3
    assert sum(o.startswith("refused, nothing was opened") for o in outcomes) >= 2
    assert "file:" in outcomes[1] and "refused" in outcomes[2]
    assert outcomes[3].startswith("refused, nothing was opened") and "file:" in outcomes[3]  # the click, not "clicked"
    refused = {r.url for r in found.refused}  # the result names what was refused, not only the transcript
    assert {"file:///etc/passwd", f"{web_site.private_base}/admin"} <= refused
    assert f"Refused by the URL policy: {found.refused[0].url}" in found.folded()
    assert web_site.private_requests == []  # the intranet server never saw a request
    assert all(s.url.startswith(web_site.base) for s in transcript.steps)
    # The injected text reached the model only inside the page block.
    for request in searcher_requests(stand_in):
        for text in request.texts():
            if "ignore your instructions" in text.lower():
                page = Page(request)
                assert "ignore your instructions" in page.block.lower()
                assert "ignore your instructions" not in text.replace(page.block, "").lower()


async def test_search_docs_and_errors_a_host_reads(
    xdisplay: Any, stand_in: StandInModel, web_site: WebSite, tmp_path: Path
) -> None:
    async with search_server(xdisplay, stand_in, tmp_path, web_site.url("/search?q={query}")) as client:
        message = await call_error(client, "search_docs", query="freeze")
        assert "search_docs needs" in message
        message = await call_error(client, "search_tutorial", query="   ")
        assert "the query is empty" in message
        with pytest.raises(MCPError, match="no search run 'run-1' in task 'nosuchtask'"):
            await client.read_resource("trajectory://nosuchtask/search/run-1")


async def test_the_orchestrator_keeps_a_found_tutorial_for_the_rest_of_its_task_only(
    xdisplay: Any, stand_in: StandInModel, web_site: WebSite, tmp_path: Path
) -> None:
    """Reflection says lack of tutorial, the plan calls the searcher, the tutorial stays in that task's prompts."""
    planner: list[ModelRequest] = []
    audits = iter([lack_of_tutorial(), *[on_track()] * 10])

    def answer(request: ModelRequest) -> str:
        model = request.body["model"]
        if model == SEARCHER:
            return said(f"done({TUTORIAL!r})", "The first result's snippet has the steps.")
        if model == MEMORYER:
            if request.messages[0]["content"].startswith("You check one step"):
                return json.dumps({"success": True, "summary": "The action had its effect."})
            return next(audits)
        planner.append(request)
        task = _task_lines(request)[-1]
        if "second task" in task:
            return act("done()", "Nothing to do.")
        calls = sum(1 for r in planner if _task_lines(r)[-1] == task)
        if calls == 1:
            return act("move_pointer(x=10, y=10)", "Look around.")
        if calls == 2:
            return act('call_search_agent(query="freeze the first row in Tabula Sheets")', "Look it up.")
        if calls == 3:
            return act("move_pointer(x=20, y=20)", "Follow step 1.")
        return act("done()", "Done as the tutorial says.")

    stand_in.script(default=answer)
    endpoint = {"base_url": stand_in.url, "backoff_seconds": 0.05, "max_retries": 0}
    server = build_server(
        load_settings(
            models={"searcher": {**endpoint, "model": SEARCHER}, "memoryer": {**endpoint, "model": MEMORYER}},
            memory={"trajectory_dir": str(tmp_path / "results")},
            search={"engine": "template", "url_template": web_site.url("/search?q={query}")},
            ocr={"warm_up": False},
        )
    )
    settings = load_settings(
        models={"orchestrator": {**endpoint, "model": PLANNER}},
        orchestrator={"results_dir": str(tmp_path / "results"), "max_steps": 6},
    )
    try:
        first = await run_task(
            "Freeze the first row", settings=settings, task_id="freeze", connection=InMemoryServer(server.mcp)
        )
        second = await run_task(
            "The second task", settings=settings, task_id="second", connection=InMemoryServer(server.mcp)
        )
    finally:
        server.close()
    assert first.outcome == "unverified" and second.outcome == "unverified", first.record.message  # no checker
    freeze = [r for r in planner if _task_lines(r)[-1] == "Task: Freeze the first row"]
    assert len(freeze) == 4
    assert "lack_of_tutorial" in freeze[1].texts()[-2] or "look up how to do this" in freeze[1].texts()[-2]
    assert all(TUTORIAL not in text for r in freeze[:2] for text in r.texts())
    for later in freeze[2:]:  # every later step of the task carries the tutorial and its picture
        tutorial_text = next(t for t in later.texts() if t.startswith("Tutorial 1 (found for this task"))
        assert TUTORIAL in tutorial_text and "call_search_agent: Tutorial search for" in tutorial_text
        assert any(image.size == (1024, 640) for image in later.images())  # the results page it ended on
    other = [r for r in planner if r not in freeze]
    assert other and all(TUTORIAL not in text for r in other for text in r.texts())
    assert first.record.steps[1].action is not None and first.record.steps[1].action.tool == "search_tutorial"
    # The search step is judged by its result (off the screen), not by a screenshot step check.
    memoryer = [r for r in stand_in.requests if r.body["model"] == MEMORYER]
    checks = [r for r in memoryer if r.messages[0]["content"].startswith("You check one step")]
    assert len(checks) == 2 and all("search_tutorial" not in t for r in checks for t in r.texts()[1:])
    assert any("search_tutorial (DONE, 1 steps)" in t for r in memoryer for t in r.texts()[1:])


def _task_lines(request: ModelRequest) -> list[str]:
    return [line for text in request.texts() for line in text.splitlines() if line.startswith("Task: ")]


def lack_of_tutorial() -> str:
    return json.dumps(
        {
            "status": "Off-track",
            "error_type": "lack_of_tutorial",
            "reflection": "The agent does not know where the freeze command is.",
            "is_milestone": False,
            "new_facts": [],
        }
    )


HELP = Path("/usr/share/libreoffice/help/en-US/text/scalc")  # Debian's libreoffice-help-en-us (install.sh --dev)


async def test_offline_the_searcher_browses_real_help_pages_from_the_local_docs_index(
    xdisplay: Any, stand_in: StandInModel, tmp_path: Path
) -> None:
    """engine=local: the results page and LibreOffice's own help pages come from the server's docs server."""
    assert HELP.is_dir(), "libreoffice-help-en-us is not installed (scripts/install.sh --dev installs it)"
    index = tmp_path / "docs.sqlite"
    build_index([HELP], index)
    seen: list[Page] = []

    def answer(request: ModelRequest) -> str:
        page = Page(request)
        seen.append(page)
        if "/search" in page.url:
            return said(f"click({page.id_of('Freezing Rows or Columns as Headers')})", "The guide page.")
        if len(seen) == 2:
            return said('save_note("View - Freeze Cells - Freeze Rows and Columns")', "The steps are here.")
        return said('done("1. Click the cell below the row to freeze.\\n2. Choose View - Freeze Cells.")')

    stand_in.script(default=answer)
    env = base_env(
        DISPLAY=xdisplay.name,
        SYMPHONY_MODELS__SEARCHER__BASE_URL=stand_in.url,
        SYMPHONY_MODELS__SEARCHER__MODEL=SEARCHER,
        SYMPHONY_SEARCH__ENGINE="local",
        SYMPHONY_SEARCH__DOCS_INDEX=str(index),
        SYMPHONY_OCR__WARM_UP="false",
    )
    async with Client(ServerProcess("--trajectory-dir", str(tmp_path / "trajectories"), env=env)) as client:
        listed = await client.call_tool("search_docs", {"query": "how to freeze rows in Calc", "limit": 3})
        result = await client.call_tool("search_tutorial", {"query": "how to freeze rows in Calc"})
    hits = listed.structured_content["results"]  # type: ignore[index]
    assert listed.structured_content["engine"] == "local"  # type: ignore[index]
    # the how-to guide and the reference page of its command are the first two (test_search_docs.py)
    guide_hit = next(hit for hit in hits[:2] if hit["title"] == "Freezing Rows or Columns as Headers")
    assert guide_hit["url"].endswith("guide/line_fix.html")
    found = TutorialResult.model_validate(result.structured_content)
    assert found.completion_reason == "DONE" and found.engine == "local", found.error
    assert seen[0].url.startswith("http://127.0.0.1:") and "/search?" in seen[0].url
    guide = seen[1]
    assert guide.url.endswith("/usr/share/libreoffice/help/en-US/text/scalc/guide/line_fix.html")
    assert "Title: Freezing Rows or Columns as Headers" in guide.block and "Freeze" in guide.text
    assert found.sources == [guide.url] and len(found.images) == 1


async def test_a_search_past_its_time_bound_ends_with_an_error_and_its_steps_so_far(
    xdisplay: Any, stand_in: StandInModel, web_site: WebSite, tmp_path: Path
) -> None:
    stand_in.script(default=lambda request: Reply(said('scroll("down", 2)'), delay=1.5))  # a slow model
    template = web_site.url("/search?q={query}")
    async with search_server(xdisplay, stand_in, tmp_path, template, search_timeout_seconds="4") as client:
        result = await client.call_tool("search_tutorial", {"query": "freeze row"})
        assert not result.is_error
        found = TutorialResult.model_validate(result.structured_content)
        assert not (await client.call_tool("screen_info", {})).is_error  # still serving
    assert found.completion_reason == "ERROR" and "longer than its bound of 4 s" in (found.error or "")
    transcript = SearchTranscript.model_validate_json(Path(found.transcript_file).read_text())
    assert 1 <= len(transcript.steps) == found.steps_used < 4 and transcript.result is not None
