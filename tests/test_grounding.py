"""Description-grounded actions on a real Tk window, with a stand-in grounding model over real HTTP.

The stand-in answers the way each model family does (format and coordinate convention), computing
the point from the widget's real geometry and the size of the image it received.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from mcp import Client

from symphony_mcp.config import load_settings
from symphony_mcp.server import SymphonyServer, build_server
from testkit.display import SCREEN
from testkit.mcp_calls import call_error, call_ok
from testkit.model_server import ModelRequest, Reply, StandInModel
from testkit.swatch import red_centroid
from testkit.tk_probe import TkProbe

pytestmark = pytest.mark.anyio

SMART_1080P = (1932, 1092)  # Qwen smart resize of 1920x1080 (factor 28)


@asynccontextmanager
async def grounded(
    stand_in: StandInModel, family: str = "ui-tars-1.5", grounding: dict[str, Any] | None = None, **endpoint: Any
) -> AsyncIterator[tuple[Client, SymphonyServer]]:
    """A server whose grounder role is the stand-in model."""
    grounder = {
        "base_url": stand_in.url,
        "model": "stand-in-grounder",
        "api_key": "sk-test-key",
        "backoff_seconds": 0.05,
        "timeout": 5,
        **endpoint,
    }
    built = build_server(
        load_settings(models={"grounder": grounder}, grounding={"family": family, **(grounding or {})})
    )
    try:
        async with Client(built.mcp) as client:
            yield client, built
    finally:
        built.close()


def in_convention(point: tuple[float, float], size: tuple[int, int], convention: str) -> tuple[float, float]:
    """A screen point as a model of the given convention would state it for an image of `size`.

    An image barely larger than the screen (a smart-resize size) holds the screen unscaled in its
    top-left corner, with padding on the right and bottom.
    """
    (sx, sy), (width, height) = point, size
    padded = width >= SCREEN[0] and height >= SCREEN[1] and width * height <= SCREEN[0] * SCREEN[1] * 1.05
    if convention == "pixels":
        if padded:
            return sx, sy
        return (sx + 0.5) * width / SCREEN[0] - 0.5, (sy + 0.5) * height / SCREEN[1] - 0.5
    if convention == "relative-1000":
        return sx / SCREEN[0] * 1000, sy / SCREEN[1] * 1000
    return sx / SCREEN[0], sy / SCREEN[1]


def answering(
    target: Callable[[ModelRequest], tuple[float, float]], convention: str, fmt: Callable[[float, float], str]
) -> Callable[[ModelRequest], str]:
    def reply(request: ModelRequest) -> str:
        x, y = in_convention(target(request), request.images()[0].size, convention)
        return fmt(x, y)

    return reply


@dataclass(frozen=True)
class Case:
    family: str
    convention: str
    fmt: Callable[[float, float], str]
    image_size: tuple[int, int]
    grounding: dict[str, Any] | None = None
    endpoint: dict[str, Any] | None = None


def _json_point(x: float, y: float) -> str:
    return "```json\n" + json.dumps([{"point_2d": [round(x), round(y)], "label": "Press me"}]) + "\n```"


CASES = {
    "ui-tars-1.5 start_box": Case(
        "ui-tars-1.5", "pixels", lambda x, y: f"click(start_box='({x:.0f},{y:.0f})')", SMART_1080P
    ),
    "ui-tars-1.5 <point>": Case(
        "ui-tars-1.5", "pixels", lambda x, y: f"Action: click(point='<point>{x:.0f} {y:.0f}</point>')", SMART_1080P
    ),
    "ui-tars-1.5 box corners": Case(
        "ui-tars-1.5",
        "pixels",
        lambda x, y: f"<|box_start|>({x - 30:.0f},{y - 12:.0f}),({x + 30:.0f},{y + 12:.0f})<|box_end|>",
        SMART_1080P,
    ),
    "ui-tars-1.0 relative": Case("ui-tars-1.0", "relative-1000", lambda x, y: f"({x:.0f},{y:.0f})", SCREEN),
    "qwen2.5-vl point_2d": Case("qwen2.5-vl", "pixels", _json_point, SMART_1080P),
    "qwen2.5-vl bbox_2d": Case(
        "qwen2.5-vl",
        "pixels",
        lambda x, y: json.dumps([{"bbox_2d": [round(x - 40), round(y - 10), round(x + 40), round(y + 10)]}]),
        SMART_1080P,
    ),
    "qwen3-vl relative": Case("qwen3-vl", "relative-1000", _json_point, SCREEN),
    "gta1": Case("gta1", "pixels", lambda x, y: f"({x:.0f},{y:.0f})", SMART_1080P),
    "opencua": Case("opencua", "pixels", lambda x, y: f"pyautogui.click(x={x:.0f}, y={y:.0f})", SMART_1080P),
    "scalecua": Case(
        "scalecua", "pixels", lambda x, y: f"<action>\nclick(x={x:.0f}, y={y:.0f})\n</action>", SMART_1080P
    ),
    "pixels x= y=": Case("pixels", "pixels", lambda x, y: f"The button is at x={x:.1f}, y={y:.1f}.", SCREEN),
    "pixels 0-1 floats": Case("pixels", "unit", lambda x, y: f"({x:.4f}, {y:.4f})", SCREEN),
    "pixels downscaled": Case(
        "pixels", "pixels", lambda x, y: f"({x:.0f}, {y:.0f})", (1024, 576), endpoint={"image_max_side": 1024}
    ),
    "ui-tars-1.5 smaller pixel budget": Case(
        "ui-tars-1.5",
        "pixels",
        lambda x, y: f"({x:.0f},{y:.0f})",
        (1316, 728),
        grounding={"max_pixels": 1_000_000},
    ),
    "coordinates override": Case(
        "ui-tars-1.5",
        "relative-1000",
        lambda x, y: f"({x:.0f},{y:.0f})",
        SMART_1080P,
        grounding={"coordinates": "relative-1000"},
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
async def test_click_by_description_lands_on_the_widget(case: Case, tk_probe: TkProbe, stand_in: StandInModel) -> None:
    stand_in.script(default=answering(lambda _: tk_probe.centre("button"), case.convention, case.fmt))
    async with grounded(stand_in, case.family, case.grounding, **(case.endpoint or {})) as (client, _):
        record = await call_ok(client, "click", description="the 'Press me' button")
    tk_probe.wait(lambda s: s["clicks"] == 1)
    (request,) = stand_in.requests
    assert request.images()[0].size == case.image_size
    assert any("the 'Press me' button" in text for text in request.texts())
    assert request.headers["authorization"] == "Bearer sk-test-key"
    assert request.body["model"] == "stand-in-grounder"
    (grounding,) = record["grounding"]
    assert grounding["method"] == "vlm" and grounding["query"] == "the 'Press me' button"
    assert grounding["model"] == "stand-in-grounder" and grounding["raw_answer"]
    if case.family == "gta1":  # GTA1 is told the size of the image it sees
        assert f"{case.image_size[0]} pixels wide" in request.messages[0]["content"]


async def test_type_focuses_the_described_field(tk_probe: TkProbe, stand_in: StandInModel) -> None:
    stand_in.script(default=answering(lambda _: tk_probe.centre("entry"), "pixels", lambda x, y: f"({x:.0f},{y:.0f})"))
    async with grounded(stand_in) as (client, _):
        record = await call_ok(client, "type", text="grounded text", description="the text field", enter=True)
    state = tk_probe.wait(lambda s: s["submitted"] == ["grounded text"])
    assert state["focus"].endswith("entry")
    assert record["action"] == "type" and record["grounding"][0]["query"] == "the text field"


async def test_drag_and_drop_between_two_described_points(tk_probe: TkProbe, stand_in: StandInModel) -> None:
    canvas = tk_probe.state()["widgets"]["canvas"]
    start = (canvas["left"] + 50, canvas["top"] + 60)
    end = (canvas["left"] + 300, canvas["top"] + 220)

    def which(request: ModelRequest) -> tuple[float, float]:
        return start if any("circle" in t for t in request.texts()) else end

    stand_in.script(default=answering(which, "pixels", lambda x, y: f"({x:.0f},{y:.0f})"))
    async with grounded(stand_in) as (client, _):
        record = await call_ok(
            client, "drag_and_drop", start_description="the red circle", end_description="the bin icon"
        )
    state = tk_probe.wait(lambda s: s["drag"] and s["drag"]["end"])
    assert abs(state["drag"]["start"][0] - start[0]) <= 2 and abs(state["drag"]["start"][1] - start[1]) <= 2
    assert abs(state["drag"]["end"][0] - end[0]) <= 2 and abs(state["drag"]["end"][1] - end[1]) <= 2
    assert [g["query"] for g in record["grounding"]] == ["the red circle", "the bin icon"]
    # Both ends were located on one capture.
    assert len(stand_in.requests) == 2
    first, second = (r.images()[0] for r in stand_in.requests)
    assert first.tobytes() == second.tobytes()


async def test_drag_and_drop_mixes_a_description_and_coordinates(tk_probe: TkProbe, stand_in: StandInModel) -> None:
    canvas = tk_probe.state()["widgets"]["canvas"]
    start = (canvas["left"] + 40, canvas["top"] + 40)
    end = (canvas["left"] + 250, canvas["top"] + 150)
    stand_in.script(default=answering(lambda _: start, "pixels", lambda x, y: f"({x:.0f},{y:.0f})"))
    async with grounded(stand_in) as (client, _):
        await call_ok(client, "drag_and_drop", start_description="the dot", end_x=end[0], end_y=end[1], space="screen")
    state = tk_probe.wait(lambda s: s["drag"] and s["drag"]["end"])
    assert abs(state["drag"]["start"][0] - start[0]) <= 2 and abs(state["drag"]["end"][0] - end[0]) <= 2


async def test_scroll_at_the_described_element(tk_probe: TkProbe, stand_in: StandInModel) -> None:
    stand_in.script(default=answering(lambda _: tk_probe.centre("text"), "pixels", lambda x, y: f"({x:.0f},{y:.0f})"))
    async with grounded(stand_in) as (client, _):
        await call_ok(client, "scroll", description="the long text", vertical=-5)
    tk_probe.wait(lambda s: s["text_top"] > 0)


async def test_locate_then_click_its_point(tk_probe: TkProbe, stand_in: StandInModel) -> None:
    stand_in.script(default=answering(lambda _: tk_probe.centre("button"), "pixels", lambda x, y: f"({x:.0f},{y:.0f})"))
    async with grounded(stand_in) as (client, _):
        await call_ok(client, "screenshot", max_width=1920, max_height=1080)  # the latest frame is full size
        found = await call_ok(client, "locate", description="the 'Press me' button")
        bx, by = tk_probe.centre("button")
        assert abs(found["screen_point"]["x"] - bx) <= 2 and abs(found["screen_point"]["y"] - by) <= 2
        assert found["image_size"] == list(SMART_1080P) and found["answers"] == 1
        assert found["overhead_ms"] >= 0 and found["raw_answer"].startswith("(")
        assert tk_probe.state()["clicks"] == 0  # locating clicks nothing
        # The point is in the latest screenshot's space: a host passes it to click as it is.
        assert found["space"] == "screenshot" and found["point"] == {"x": found["x"], "y": found["y"]}
        await call_ok(client, "click", x=found["x"], y=found["y"])
    tk_probe.wait(lambda s: s["clicks"] == 1)


async def test_refinement_looks_again_at_a_zoomed_crop(tk_probe: TkProbe, stand_in: StandInModel) -> None:
    """A first guess beside the target is corrected by the second look, at a crop around the guess."""
    sx, sy = tk_probe.centre("swatch")
    first_guess = f"({sx},{sy + 250})"  # below the Tk window: a click there would miss

    def look(request: ModelRequest) -> str:
        return "({:.0f},{:.0f})".format(*red_centroid(request.images()[0]))

    stand_in.script(first_guess, look, first_guess, look)
    async with grounded(stand_in, "ui-tars-1.5", {"refine": True, "refine_zoom": 2}) as (client, _):
        located = await call_ok(client, "locate", description="the red swatch")
        record = await call_ok(client, "click", description="the red swatch")
    tk_probe.wait(lambda s: s["swatch"] == "#0000ff")
    # No screenshot was taken: the result is in the default screenshot's pixels (2/3 of the screen).
    guess = located["refined_from"]
    assert abs(guess["x"] - sx * 2 / 3) <= 1 and abs(guess["y"] - (sy + 250) * 2 / 3) <= 1 and located["answers"] == 2
    assert abs(located["screen_point"]["x"] - sx) <= 3 and abs(located["screen_point"]["y"] - sy) <= 3
    first, second = stand_in.requests[:2]
    assert first.images()[0].size == SMART_1080P
    # Half the screen each way (960x540), snapped to the smart-resize size 952x532 so it is sent unresampled.
    assert second.images()[0].size == (952, 532)
    assert any("the red swatch" in text for text in second.texts())
    (grounding,) = record["grounding"]
    assert grounding["refined_from"] == guess and grounding["raw_answer"] != first_guess
    assert abs(record["screen_points"][0]["x"] - sx) <= 3 and abs(record["screen_points"][0]["y"] - sy) <= 3


async def test_refinement_keeps_the_first_guess_when_the_second_look_fails(
    tk_probe: TkProbe, stand_in: StandInModel
) -> None:
    good = answering(lambda _: tk_probe.centre("button"), "pixels", lambda x, y: f"({x:.0f},{y:.0f})")
    stand_in.script(good, "I cannot see it here", "(9999, 9999)")
    async with grounded(stand_in, grounding={"refine": True}) as (client, _):
        record = await call_ok(client, "click", description="the 'Press me' button")
    tk_probe.wait(lambda s: s["clicks"] == 1)
    assert len(stand_in.requests) == 3
    (grounding,) = record["grounding"]
    assert grounding["refined_from"] is None and "9999" not in grounding["raw_answer"]


async def test_rate_limits_and_server_errors_are_retried(tk_probe: TkProbe, stand_in: StandInModel) -> None:
    good = answering(lambda _: tk_probe.centre("button"), "pixels", lambda x, y: f"({x:.0f},{y:.0f})")
    stand_in.script(Reply(status=429, headers={"Retry-After": "0.2"}), Reply(status=503), good)
    async with grounded(stand_in) as (client, _):
        await call_ok(client, "click", description="the button")
        status = await call_ok(client, "model_status")
    tk_probe.wait(lambda s: s["clicks"] == 1)
    assert len(stand_in.requests) == 3
    grounder = next(r for r in status["roles"] if r["role"] == "grounder")
    assert grounder["configured"] and grounder["model"] == "stand-in-grounder"
    assert grounder["usage"]["calls"] == 1 and grounder["usage"]["retries"] == 2
    assert grounder["usage"]["total_tokens"] == 1012
    assert grounder["usage"]["model_ms"] >= 200  # Retry-After was honoured
    assert "sk-test-key" not in json.dumps(status)


async def test_unusable_answer_is_reasked_once_with_feedback(tk_probe: TkProbe, stand_in: StandInModel) -> None:
    good = answering(lambda _: tk_probe.centre("button"), "pixels", lambda x, y: f"({x:.0f},{y:.0f})")
    stand_in.script("I think it is the grey one near the top.", good)
    async with grounded(stand_in) as (client, _):
        found = await call_ok(client, "locate", description="the button")
    assert found["answers"] == 2
    second = stand_in.requests[1]
    assert second.messages[-2] == {"role": "assistant", "content": "I think it is the grey one near the top."}
    assert "could not be used" in second.messages[-1]["content"]
    assert "1932x1092" in second.messages[-1]["content"]


async def test_two_unusable_answers_are_reported(tk_probe: TkProbe, stand_in: StandInModel) -> None:
    stand_in.script("no idea", "(5000, 40)")
    async with grounded(stand_in) as (client, _):
        message = await call_error(client, "click", description="the button")
        assert "'no idea'" in message and "'(5000, 40)'" in message and "outside the image" in message
        assert "SYMPHONY_GROUNDING__FAMILY" in message
        await call_ok(client, "screenshot")  # still serving
    assert tk_probe.state()["clicks"] == 0


async def test_timeouts_are_retried_then_reported(stand_in: StandInModel, xdisplay: object) -> None:
    stand_in.script(default=Reply(text="(10,10)", delay=1.5))
    async with grounded(stand_in, timeout=0.3, max_retries=1) as (client, _):
        message = await call_error(client, "locate", description="the button")
        assert "no answer within 0.3 s" in message and "SYMPHONY_MODELS__GROUNDER__TIMEOUT" in message
        assert "2 attempt(s)" in message
        await call_ok(client, "screenshot")
    assert len(stand_in.requests) == 2


async def test_endpoint_down_is_reported(stand_in: StandInModel, xdisplay: object) -> None:
    from testkit.ports import free_port

    async with grounded(stand_in, base_url=f"http://127.0.0.1:{free_port()}/v1", max_retries=1) as (client, _):
        message = await call_error(client, "click", description="the button")
        assert "cannot reach the endpoint" in message and "SYMPHONY_MODELS__GROUNDER__BASE_URL" in message
        await call_ok(client, "move_pointer", x=10, y=10)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (Reply(status=401, body={"error": {"message": "Incorrect API key"}}), "SYMPHONY_MODELS__GROUNDER__API_KEY"),
        (Reply(status=404, body={"error": {"message": "model not found"}}), "usually end in /v1"),
        (
            Reply(status=400, body={"error": {"message": "This model's maximum context length is 32768 tokens"}}),
            "does not fit the model's context",
        ),
        (Reply(status=200, body={"object": "chat.completion", "choices": []}), "no answer message"),
    ],
    ids=["auth", "not-found", "context-length", "no-choices"],
)
async def test_endpoint_errors_fail_at_once_with_the_setting_to_check(
    reply: Reply, expected: str, stand_in: StandInModel, xdisplay: object
) -> None:
    stand_in.script(default=reply)
    async with grounded(stand_in) as (client, _):
        message = await call_error(client, "locate", description="the button")
        status = await call_ok(client, "model_status")
    assert expected in message
    assert len(stand_in.requests) == 1  # not retried
    grounder = next(r for r in status["roles"] if r["role"] == "grounder")
    assert grounder["usage"]["failed_calls"] == 1


async def test_without_a_grounder_descriptions_fail_and_coordinates_work(tk_probe: TkProbe, server: SymphonyServer):
    async with Client(server.mcp) as client:
        message = await call_error(client, "click", description="the button")
        assert "SYMPHONY_MODELS__GROUNDER__BASE_URL" in message and "SYMPHONY_MODELS__GROUNDER__MODEL" in message
        x, y = tk_probe.centre("button")
        await call_ok(client, "click", x=x, y=y, space="screen")
        status = await call_ok(client, "model_status")
    tk_probe.wait(lambda s: s["clicks"] == 1)
    assert not any(role["configured"] for role in status["roles"])


async def test_target_arguments_are_checked(stand_in: StandInModel, xdisplay: object) -> None:
    async with grounded(stand_in) as (client, _):
        cases = {
            ("click", "not both"): {"description": "the button", "x": 5, "y": 5},
            ("click", "got neither"): {},
            ("click", "got only y"): {"y": 5},
            ("click", "unknown frame_id 'no-such-frame'"): {"description": "b", "frame_id": "no-such-frame"},
            ("click", "description is empty"): {"description": "  "},
            ("drag_and_drop", "give either start_description or start_x"): {
                "start_description": "a",
                "start_x": 1,
                "end_x": 5,
                "end_y": 5,
            },
            ("type", "give either description or x and y, not both"): {"text": "a", "description": "f", "x": 1},
        }
        for (tool, expected), arguments in cases.items():
            message = await call_error(client, tool, **arguments)
            assert expected in message, (tool, message)
    assert stand_in.requests == []  # nothing reached the model
