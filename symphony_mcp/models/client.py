"""An async chat-completions client for any OpenAI-compatible endpoint (vLLM, OpenAI, ...), on httpx.

Rate limits (429), server errors (5xx), timeouts and unreachable endpoints are retried with
exponential backoff and jitter, a bounded number of times, honouring Retry-After. Everything
else fails at once with an error that says which setting to check.
"""

from __future__ import annotations

import email.utils
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import httpx
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt, wait_exponential_jitter

from symphony_mcp.errors import (
    ModelAuthError,
    ModelContextLengthError,
    ModelError,
    ModelNotFoundError,
    ModelUnavailableError,
)
from symphony_mcp.models.endpoints import ResolvedEndpoint, setting_name
from symphony_mcp.models.messages import ChatMessage
from symphony_mcp.models.usage import TokenUsage, UsageLedger

log = logging.getLogger(__name__)

_RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})
_MAX_RETRY_AFTER = 30.0
_MAX_BACKOFF = 30.0
_CONTEXT_HINTS = ("context length", "context_length", "maximum context", "too many tokens", "prompt is too long")


@dataclass(frozen=True)
class ToolCall:
    """A native function call in an answer; `arguments` is the JSON text as the model wrote it."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class Completion:
    text: str
    model: str
    finish_reason: str | None
    usage: TokenUsage | None
    elapsed_ms: float
    attempts: int
    tool_calls: tuple[ToolCall, ...] = ()
    reasoning: str = ""  # the thinking a reasoning model sends beside its answer (reasoning_content or reasoning)

    @property
    def written(self) -> str:
        """The answer as text; native calls are appended as code, so histories and reports read the same."""
        calls = "\n".join(f"{c.name}({c.arguments})" for c in self.tool_calls)
        code = f"```python\n{calls}\n```" if calls else ""
        return "\n".join(part for part in (self.text, code) if part)


class _TransientError(Exception):
    """A failure worth retrying; `reason` is what the caller sees if the retries run out."""

    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after


class ChatClient:
    """One role's model: `complete(messages)` returns the answer text and records usage."""

    def __init__(self, endpoint: ResolvedEndpoint, http: httpx.AsyncClient, usage: UsageLedger) -> None:
        self.endpoint = endpoint
        self._http = http
        self._usage = usage

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        response_format: dict[str, Any] | None = None,
        tools: list[dict[str, Any]] | None = None,
        tool_choice: str | None = None,
    ) -> Completion:
        """One answer; with `tools` (OpenAI function definitions) the model may answer with tool calls."""
        endpoint = self.endpoint
        body: dict[str, Any] = {
            "model": endpoint.model,
            "messages": [m.model_dump(exclude_none=True) for m in messages],
            "temperature": endpoint.temperature if temperature is None else temperature,
            "max_tokens": max_tokens or endpoint.max_tokens,
            **endpoint.extra_body,
        }
        if response_format is not None:
            body["response_format"] = response_format
        if tools:
            body["tools"] = tools
            if tool_choice is not None:
                body["tool_choice"] = tool_choice
        headers = {"Authorization": f"Bearer {endpoint.api_key}"} if endpoint.api_key else {}
        started = time.perf_counter()
        attempts = 0
        retrying = AsyncRetrying(
            stop=stop_after_attempt(endpoint.max_retries + 1),
            wait=_backoff(endpoint.backoff_seconds),
            retry=retry_if_exception_type(_TransientError),
            before_sleep=self._log_retry,
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    attempts += 1
                    payload = await self._post(body, headers)
            completion = self._completion(payload, started, attempts)
        except _TransientError as exc:
            self._account(None, attempts, started, ok=False)
            raise ModelUnavailableError(
                f"{endpoint.describe()}: {exc.reason} (gave up after {attempts} attempt(s); "
                f"{setting_name(endpoint.role, 'max_retries')} sets the retries)"
            ) from exc
        except ModelError:
            self._account(None, attempts, started, ok=False)
            raise
        self._account(completion.usage, attempts, started, ok=True)
        return completion

    def note_refused(self) -> None:
        """Count an answer that could not be used in this role's usage."""
        self._usage.refused(self.endpoint.role)

    async def _post(self, body: dict[str, Any], headers: dict[str, str]) -> Any:
        endpoint = self.endpoint
        try:
            response = await self._http.post(
                endpoint.chat_url, json=body, headers=headers, timeout=httpx.Timeout(endpoint.timeout)
            )
        except httpx.TimeoutException as exc:
            raise _TransientError(
                f"no answer within {endpoint.timeout:g} s ({setting_name(endpoint.role, 'timeout')})"
            ) from exc
        except httpx.TransportError as exc:
            raise _TransientError(
                f"cannot reach the endpoint ({type(exc).__name__}: {exc}); is it running, and is "
                f"{setting_name(endpoint.role, 'base_url')} right?"
            ) from exc
        if response.status_code in _RETRY_STATUSES:
            message = f"HTTP {response.status_code} {_server_message(response)}"
            raise _TransientError(message, _retry_after(response.headers))
        if response.status_code >= 400:
            raise self._http_error(response)
        try:
            return response.json()
        except ValueError as exc:
            raise ModelError(f"{endpoint.describe()}: the response is not JSON: {response.text[:200]!r}") from exc

    def _http_error(self, response: httpx.Response) -> ModelError:
        endpoint, status, message = self.endpoint, response.status_code, _server_message(response)
        prefix = f"{endpoint.describe()}: HTTP {status} {message}"
        if status in (401, 403):
            return ModelAuthError(
                f"{prefix}; check {setting_name(endpoint.role, 'api_key')} "
                f"(or {setting_name(endpoint.role, 'api_key_env')})"
            )
        if status == 404:
            return ModelNotFoundError(
                f"{prefix}; check {setting_name(endpoint.role, 'base_url')} (OpenAI-compatible servers "
                f"usually end in /v1) and {setting_name(endpoint.role, 'model')}"
            )
        if any(hint in message.lower() for hint in _CONTEXT_HINTS):
            return ModelContextLengthError(
                f"{prefix}; the request does not fit the model's context: lower "
                f"{setting_name(endpoint.role, 'max_tokens')} or {setting_name(endpoint.role, 'image_max_side')}, "
                "or send fewer images"
            )
        return ModelError(f"{prefix}; the endpoint rejected the request")

    def _completion(self, payload: Any, started: float, attempts: int) -> Completion:
        try:
            choice = payload["choices"][0]
            message = choice["message"]
            calls = tuple(
                ToolCall(
                    id=str(c.get("id", "")),
                    name=c["function"]["name"],
                    arguments=c["function"].get("arguments") or "{}",
                )
                for c in message.get("tool_calls") or ()
            )
            text = _content_text(message.get("content"))
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise ModelError(
                f"{self.endpoint.describe()}: the response has no answer message: {str(payload)[:300]}"
            ) from exc
        usage = payload.get("usage")
        tokens = None
        if isinstance(usage, dict):
            prompt, completion_tokens = int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
            total = int(usage.get("total_tokens") or prompt + completion_tokens)
            tokens = TokenUsage(prompt_tokens=prompt, completion_tokens=completion_tokens, total_tokens=total)
        return Completion(
            text=text,
            model=str(payload.get("model") or self.endpoint.model),
            finish_reason=choice.get("finish_reason"),
            usage=tokens,
            elapsed_ms=round((time.perf_counter() - started) * 1000, 2),
            attempts=attempts,
            tool_calls=calls,
            reasoning=_reasoning(message),
        )

    def _account(self, tokens: TokenUsage | None, attempts: int, started: float, ok: bool) -> None:
        elapsed = (time.perf_counter() - started) * 1000
        self._usage.record(self.endpoint.role, tokens, max(0, attempts - 1), elapsed, ok)

    def _log_retry(self, state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        delay = state.next_action.sleep if state.next_action else 0
        log.warning("%s: %s; retry %d in %.2f s", self.endpoint.describe(), exc, state.attempt_number, delay)


def _backoff(initial: float) -> Any:
    exponential = wait_exponential_jitter(multiplier=initial, max=max(initial, _MAX_BACKOFF), jitter=initial)

    def wait(state: RetryCallState) -> float:
        delay = exponential(state)
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, _TransientError) and exc.retry_after is not None:
            delay = max(delay, min(exc.retry_after, _MAX_RETRY_AFTER))
        return float(delay)

    return wait


def _retry_after(headers: httpx.Headers) -> float | None:
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, moment.timestamp() - time.time())


def _server_message(response: httpx.Response) -> str:
    """The error text an OpenAI-compatible server put in its body, shortened."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:300].strip()
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        return str(error.get("message") or error)[:300]
    if isinstance(body, dict) and "detail" in body:
        return str(body["detail"])[:300]
    return str(error or body)[:300]


def _content_text(content: Any) -> str:
    """Message content as text: a string, or the text parts of a content list; none (`null`: the answer is all
    tool calls, or all reasoning) is empty, for the caller to judge like any answer without what it needs."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    raise TypeError(f"unexpected content {content!r}")


def _reasoning(message: dict[str, Any]) -> str:
    """The reasoning beside the answer, under the names OpenAI-compatible servers use (vLLM and DeepSeek:
    reasoning_content; OpenRouter, Ollama and newer vLLM: reasoning)."""
    for key in ("reasoning_content", "reasoning"):
        value = message.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return ""
