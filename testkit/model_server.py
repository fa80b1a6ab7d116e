"""A stand-in model server for the tests and benchmarks: the OpenAI chat-completions wire protocol over real HTTP.

Each test scripts the answers. A script entry is an answer text, a `Reply` (status, headers, delay,
raw body) or a function of the request that returns either, so answers can depend on what the
client sent (e.g. the size of the image, or which element was described).
"""

from __future__ import annotations

import asyncio
import base64
import io
import itertools
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from PIL import Image
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route


@dataclass
class Reply:
    text: str | None = None
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # native function calls
    status: int = 200
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None  # sent as is instead of a completion when given
    fields: dict[str, Any] = field(default_factory=dict)  # more fields of the answer message, e.g. reasoning_content


@dataclass
class ModelRequest:
    """One request as received."""

    body: dict[str, Any]
    headers: dict[str, str]

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.body["messages"]

    def images(self) -> list[Image.Image]:
        found: list[Image.Image] = []
        for message in self.messages:
            content = message["content"]
            for part in content if isinstance(content, list) else []:
                if part["type"] == "image_url":
                    data = part["image_url"]["url"].split(",", 1)[1]
                    found.append(Image.open(io.BytesIO(base64.b64decode(data))))
        return found

    def texts(self) -> list[str]:
        found = []
        for message in self.messages:
            content = message["content"]
            if isinstance(content, str):
                found.append(content)
            else:
                found += [part["text"] for part in content if part["type"] == "text"]
        return found


def _tool_calls(reply: Reply, completion: str) -> dict[str, Any]:
    """The reply's calls with ids unique across the server's life, as OpenAI's are (the Agents SDK refuses a reused
    id)."""
    if not reply.tool_calls:
        return {}
    calls = [
        {
            "id": f"call_{completion}_{i}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)},
        }
        for i, (name, arguments) in enumerate(reply.tool_calls)
    ]
    return {"tool_calls": calls}


Script = str | Reply | Callable[[ModelRequest], "str | Reply"]


class StandInModel:
    """Serves /v1/chat/completions and /v1/models on 127.0.0.1 from a background thread."""

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []
        self._script: deque[Script] = deque()
        self._default: Script | None = None
        self._ids = itertools.count(1)
        app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
            ]
        )
        self._server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
        self._thread = threading.Thread(target=self._server.run, daemon=True)

    @property
    def url(self) -> str:
        port = self._server.servers[0].sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/v1"

    def start(self) -> StandInModel:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the stand-in model server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=5)

    def script(self, *entries: Script, default: Script | None = None) -> None:
        """Answer the next requests with `entries` in order, then with `default` (else HTTP 500)."""
        self.requests.clear()
        self._script = deque(entries)
        self._default = default

    async def _chat(self, request: Request) -> JSONResponse:
        received = ModelRequest(body=await request.json(), headers=dict(request.headers))
        self.requests.append(received)
        entry = self._script.popleft() if self._script else self._default
        if entry is None:
            return JSONResponse({"error": {"message": "no scripted answer left"}}, status_code=500)
        reply = entry(received) if callable(entry) else entry
        if isinstance(reply, str):
            reply = Reply(text=reply)
        if reply.delay:
            await asyncio.sleep(reply.delay)
        if reply.body is not None or reply.status != 200:
            body = reply.body if reply.body is not None else {"error": {"message": f"scripted {reply.status}"}}
            return JSONResponse(body, status_code=reply.status, headers=reply.headers)
        completion = next(self._ids)
        return JSONResponse(
            {
                "id": f"chatcmpl-{completion}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": received.body.get("model", "stand-in"),
                "choices": [
                    {
                        "index": 0,
                        "message": {
                            "role": "assistant",
                            "content": reply.text,
                            **_tool_calls(reply, str(completion)),
                            **reply.fields,
                        },
                        "finish_reason": "tool_calls" if reply.tool_calls else "stop",
                    }
                ],
                "usage": {"prompt_tokens": 1000, "completion_tokens": 12, "total_tokens": 1012},
            },
            headers=reply.headers,
        )

    async def _models(self, request: Request) -> JSONResponse:
        return JSONResponse({"object": "list", "data": [{"id": "stand-in", "object": "model"}]})
