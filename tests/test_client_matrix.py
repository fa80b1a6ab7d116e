"""Other MCP clients drive the real server as hosts do, over stdio and streamable HTTP (issue 12's matrix).

Clients: the Python SDK 1.x (its own venv, .venv-clients: this project uses mcp 2.x), the TypeScript SDK
(npm, tests/clients/ts), and the runnable agent examples of clients/examples (pydantic-ai, also with OpenAI
strict tool schemas; the OpenAI Agents SDK; LangGraph through langchain-mcp-adapters), whose model is the
stand-in model server scripted to call the tools. The SDK clients list the tools, take a screenshot, find
"Press me" with OCR, click the point the find_text result gives, and type Unicode into the Tk probe's entry;
the agents do what their README promises, screenshot -> find_text -> click_text. Each test checks the effect
on the probe. `scripts/install.sh --dev` installs the clients.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest

from symphony_mcp.config import load_settings
from symphony_mcp.desktop.virtual_display import VirtualDisplay
from symphony_mcp.server import build_server
from testkit.model_server import ModelRequest, Reply, StandInModel
from testkit.ports import free_port
from testkit.server_process import base_env, serve_command
from testkit.tk_probe import TkProbe, running_probe
from testkit.tool_names import EXPECTED_TOOLS
from testkit.waiting import wait_for

REPO = Path(__file__).resolve().parent.parent
CLIENTS = REPO / "tests" / "clients"
EXAMPLES = REPO / "clients" / "examples"
CLIENTS_PYTHON = REPO / ".venv-clients" / "bin" / "python"
TEXT = "héllo → 日本"
PHRASE = "Press me"


def require(path: Path, what: str) -> None:
    if not path.exists():
        message = f"{what} is not installed ({path}): run scripts/install.sh --dev"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture(scope="module")
def probe(xdisplay: VirtualDisplay, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TkProbe]:
    with running_probe(tmp_path_factory.mktemp("matrix")) as running:
        yield running


class HttpServers:
    """`symphony-mcp serve --transport http` subprocesses on the test display, one per set of extra flags."""

    def __init__(self, display: str) -> None:
        self.display = display
        self.running: dict[tuple[str, ...], tuple[subprocess.Popen[bytes], str]] = {}

    def url(self, *flags: str) -> str:
        if flags not in self.running:
            port = free_port()
            process = subprocess.Popen(
                [*serve_command(), "serve", "--transport", "http", "--port", str(port), *flags],
                env=base_env(DISPLAY=self.display),
                stdout=subprocess.DEVNULL,
            )
            self.running[flags] = (process, f"http://127.0.0.1:{port}/mcp")
            wait_for(lambda: process.poll() is not None or _answers(port), timeout=30)
            assert process.poll() is None, "the HTTP server exited"
        return self.running[flags][1]

    def stop(self) -> None:
        for process, _ in self.running.values():
            process.terminate()
            process.wait(timeout=10)


@pytest.fixture(scope="module")
def http_servers(xdisplay: VirtualDisplay) -> Iterator[HttpServers]:
    servers = HttpServers(xdisplay.name)
    yield servers
    servers.stop()


def _answers(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def server_target(transport: str, servers: HttpServers, *flags: str) -> list[str]:
    """The client's last arguments: the command that serves over stdio, or the URL of an HTTP server."""
    return [transport, *serve_command(), "serve", *flags] if transport == "stdio" else [transport, servers.url(*flags)]


def run_client(command: list[str], display: str) -> str:
    result = subprocess.run(
        command, env=base_env(DISPLAY=display), capture_output=True, text=True, timeout=120, encoding="utf-8"
    )
    assert result.returncode == 0, f"{command[:2]} failed:\n{result.stderr[-3000:]}"
    return result.stdout


def scenario(probe: TkProbe, **extra: Any) -> str:
    return json.dumps({"phrase": PHRASE, "text": TEXT, "entry": probe.centre("entry"), **extra})


def check_effect(probe: TkProbe, clicks_before: int) -> None:
    probe.wait(lambda s: s["clicks"] == clicks_before + 1 and s["entry"] == TEXT)


def check_report(report: dict[str, Any]) -> None:
    assert set(report["tools"]) >= EXPECTED_TOOLS
    assert report["image_types"][0] == "image" and report["frame_id"]
    # The click went where the find_text result said, in the same (screenshot) space.
    assert report["click"]["points"] == [report["center"]] and report["click"]["space"] == "screenshot"
    assert report["typed"]["action"] == "type"


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_python_sdk_1x_client(
    transport: str, probe: TkProbe, http_servers: HttpServers, xdisplay: VirtualDisplay
) -> None:
    require(CLIENTS_PYTHON, "the clients' venv")
    clicks = probe.state()["clicks"]
    host = [str(CLIENTS_PYTHON), str(CLIENTS / "python_sdk1_host.py"), scenario(probe)]
    out = run_client([*host, *server_target(transport, http_servers)], xdisplay.name)
    check_report(json.loads(out))
    check_effect(probe, clicks)


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_typescript_sdk_client(
    transport: str, probe: TkProbe, http_servers: HttpServers, xdisplay: VirtualDisplay
) -> None:
    require(CLIENTS / "ts" / "node_modules" / "@modelcontextprotocol" / "sdk", "the TypeScript SDK")
    node = shutil.which("node")
    assert node is not None, "node is not installed (apt-get install nodejs)"
    clicks = probe.state()["clicks"]
    # The last call, a 3.5 s wait, outlives the client's 2 s timeout: progress (once a second) restarts it.
    extra = {"long_wait": 3.5, "client_timeout_ms": 2000}
    out = run_client(
        [node, str(CLIENTS / "ts" / "host.mjs"), scenario(probe, **extra), *server_target(transport, http_servers)],
        xdisplay.name,
    )
    report = json.loads(out)
    check_report(report)
    check_effect(probe, clicks)
    assert len(report["progress"]) >= 2


def declared_defaults() -> dict[str, dict[str, Any]]:
    """Each tool's argument defaults as the server declares them (strict schemas drop them)."""
    server = build_server(load_settings())
    try:
        tools = anyio.run(server.mcp.list_tools)
    finally:
        server.close()
    return {
        tool.name: {
            key: value["default"] for key, value in tool.input_schema["properties"].items() if "default" in value
        }
        for tool in tools
    }


class StrictHost:
    """The stand-in model's script: a model that calls the tools with every argument, as strict mode demands."""

    def __init__(self, probe: TkProbe) -> None:
        self.entry = probe.centre("entry")
        self.defaults = declared_defaults()
        self.tools: list[dict[str, Any]] = []
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, request: ModelRequest) -> Reply | str:
        self.tools = request.body.get("tools", [])
        results = [message for message in request.messages if message["role"] == "tool"]
        if len(results) == 0:
            return self.call("screenshot", {})
        if len(results) == 1:
            return self.call("find_text", {"phrase": PHRASE})
        if len(results) == 2:
            center = tool_result(results[-1])["matches"][0]["center"]  # straight from the result
            return self.call("click", {"x": center["x"], "y": center["y"]})
        if len(results) == 3:
            x, y = self.entry
            return self.call("type", {"text": TEXT, "x": x, "y": y, "space": "screen", "overwrite": True})
        return "Done: pressed the button and typed the text."

    def call(self, name: str, arguments: dict[str, Any]) -> Reply:
        """`arguments` completed with the server's defaults: strict mode makes every property required."""
        (tool,) = [tool["function"] for tool in self.tools if tool["function"]["name"] == name]
        schema = tool["parameters"]
        full = {key: arguments.get(key, self.defaults[name].get(key)) for key in schema["properties"]}
        jsonschema.validate(full, schema)  # what a strict model sends must pass the strict schema
        self.calls.append((name, full))
        return Reply(tool_calls=[(name, full)])


def tool_result(message: dict[str, Any]) -> dict[str, Any]:
    return json.loads(tool_text(message))


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_pydantic_ai_with_strict_openai_schemas(
    transport: str, probe: TkProbe, http_servers: HttpServers, xdisplay: VirtualDisplay, stand_in: StandInModel
) -> None:
    require(CLIENTS_PYTHON, "the clients' venv")
    host = StrictHost(probe)
    stand_in.script(default=host)
    clicks = probe.state()["clicks"]
    # The default listing: no root `not`, which OpenAI refuses.
    example = [str(CLIENTS_PYTHON), str(EXAMPLES / "pydantic_ai_agent.py"), "--strict", *model_flags(stand_in)]
    out = run_client([*example, *example_target(transport, http_servers)], xdisplay.name)
    assert "Done" in out
    sent = {tool["function"]["name"]: tool["function"] for tool in host.tools}
    assert set(sent) == EXPECTED_TOOLS
    assert [name for name, tool in sent.items() if tool.get("strict") is not True] == []
    assert {name: found for name, tool in sent.items() if (found := outside_strict_subset(tool["parameters"]))} == {}
    assert [name for name, _ in host.calls] == ["screenshot", "find_text", "click", "type"]
    check_effect(probe, clicks)


def model_flags(stand_in: StandInModel) -> list[str]:
    return ["--model-url", stand_in.url, "--model", "stand-in"]


def example_target(transport: str, servers: HttpServers) -> list[str]:
    """An example's flags for this checkout's server over stdio, or for an HTTP server's URL."""
    if transport == "stdio":
        return ["--server-command", shlex.join([*serve_command(), "serve"])]
    return ["--server-url", servers.url()]


class ClickTextScript:
    """The stand-in model's script for the examples: screenshot, find_text, click_text, then an answer."""

    def __init__(self) -> None:
        self.offered: set[str] = set()
        self.results: list[str] = []

    def __call__(self, request: ModelRequest) -> Reply | str:
        self.offered = {tool["function"]["name"] for tool in request.body.get("tools", [])}
        self.results = [tool_text(message) for message in request.messages if message["role"] == "tool"]
        steps = [("screenshot", {}), ("find_text", {"phrase": PHRASE}), ("click_text", {"phrase": PHRASE})]
        if len(self.results) < len(steps):
            return Reply(tool_calls=[steps[len(self.results)]])
        return f"Clicked {PHRASE!r}."


def tool_text(message: dict[str, Any]) -> str:
    content = message["content"]
    return content if isinstance(content, str) else "".join(part.get("text", "") for part in content)


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("example", ["pydantic_ai_agent.py", "openai_agents_agent.py", "langgraph_agent.py"])
def test_agent_example_clicks_the_text_it_found(
    example: str,
    transport: str,
    probe: TkProbe,
    http_servers: HttpServers,
    xdisplay: VirtualDisplay,
    stand_in: StandInModel,
) -> None:
    """Each example runs as a user runs it: its own process, the server over stdio or HTTP, a model endpoint."""
    require(CLIENTS_PYTHON, "the clients' venv")
    script = ClickTextScript()
    stand_in.script(default=script)
    clicks = probe.state()["clicks"]
    command = [str(CLIENTS_PYTHON), str(EXAMPLES / example), *model_flags(stand_in), "--phrase", PHRASE]
    out = run_client([*command, *example_target(transport, http_servers)], xdisplay.name)
    assert f"Clicked {PHRASE!r}." in out
    assert {"screenshot", "find_text", "click_text"} <= script.offered
    found, clicked = script.results[1], script.results[2]
    assert '"exact":true' in found.replace(" ", "") and PHRASE in found  # the result itself reached the model
    assert '"action":"click"' in clicked.replace(" ", "") and PHRASE in clicked  # a click on the text OCR found
    probe.wait(lambda s: s["clicks"] == clicks + 1)  # the window saw the click


def test_openai_agents_example_outlasts_the_sdks_5_s_default(
    xdisplay: VirtualDisplay, stand_in: StandInModel, http_servers: HttpServers
) -> None:
    """The README's timeout trap: with the Agents SDK's default of 5 s `wait(7)` is lost; --tool-timeout 30 keeps it."""
    require(CLIENTS_PYTHON, "the clients' venv")
    outcomes = []
    for timeout in ("5", "30"):
        stand_in.script(Reply(tool_calls=[("wait", {"seconds": 7})]), "Waited.")
        command = [str(CLIENTS_PYTHON), str(EXAMPLES / "openai_agents_agent.py"), *model_flags(stand_in)]
        command += ["--tool-timeout", timeout, *example_target("http", http_servers)]
        result = subprocess.run(
            command, env=base_env(DISPLAY=xdisplay.name), capture_output=True, text=True, timeout=120, encoding="utf-8"
        )
        assert result.returncode == 0, result.stderr[-3000:]
        (answer,) = [tool_text(m) for m in stand_in.requests[-1].messages if m["role"] == "tool"]
        outcomes.append(answer)
    lost, kept = outcomes
    assert "An error occurred while running the tool" in lost  # the SDK gave up; the model never saw the result
    assert json.loads(kept)["summary"] == "waited 7 s"


# OpenAI's strict subset of JSON Schema (its Structured Outputs guide, "Supported schemas"; pydantic-ai's OpenAI
# provider also counts minLength/maxLength in): the keywords a strict tool's parameters may use. Others (allOf,
# not, if/then/else, dependentRequired, prefixItems, ...) get the whole request refused ("Invalid schema for
# function ...: 'not' is not permitted", 400), so every tool would be lost, not one.
OPENAI_STRICT_KEYWORDS = {
    *("type", "properties", "required", "additionalProperties", "items", "enum", "const", "anyOf", "$ref", "$defs"),
    *("description", "title", "pattern", "format", "minLength", "maxLength", "minItems", "maxItems"),
    *("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"),
}


def outside_strict_subset(schema: Any, path: str = "") -> list[str]:
    """Where `schema` uses a keyword OpenAI's strict mode refuses, or leaves an object open or a property optional."""
    if isinstance(schema, list):
        return [found for i, item in enumerate(schema) for found in outside_strict_subset(item, f"{path}/{i}")]
    if not isinstance(schema, dict):
        return []
    found = [f"{path}/{key}" for key in schema if key not in OPENAI_STRICT_KEYWORDS]
    if schema.get("type") == "object" and (
        schema.get("additionalProperties") is not False or set(schema.get("required", [])) != set(schema["properties"])
    ):
        found.append(f"{path} (object not closed or not all required)")
    for key, value in schema.items():
        if key in ("properties", "$defs"):
            found += [f for name, child in value.items() for f in outside_strict_subset(child, f"{path}/{key}/{name}")]
        elif key in ("items", "anyOf"):
            found += outside_strict_subset(value, f"{path}/{key}")
    return found
