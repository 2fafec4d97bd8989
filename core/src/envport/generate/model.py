"""The model behind the loop: one ``create(request) -> response`` call, responses as plain dicts
(``{"id", "model", "stop_reason", "content": [...], "usage": {...}}``) so that the real client,
a recorded run (replay) and a test script are interchangeable.

Only :class:`AnthropicModel` talks to the network. It reads the key from the environment and
keeps it inside the SDK client: nothing here returns, logs or records it.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from envport.errors import EnvportError

API_KEY_ENV = "ANTHROPIC_API_KEY"
DEFAULT_MODEL = "claude-sonnet-4-6"  # claude-sonnet-4-5 reaches end of life 2026-11-30
MAX_TOKENS = 16_000


class MissingApiKeyError(EnvportError):
    """No key in the environment: the real loop cannot run."""


@dataclass(frozen=True)
class Request:
    model: str
    system: str
    messages: list[dict]
    tools: list[dict]
    max_tokens: int = MAX_TOKENS

    def kwargs(self) -> dict:
        return {"model": self.model, "system": self.system, "messages": self.messages,
                "tools": self.tools, "max_tokens": self.max_tokens}


class Model(Protocol):
    def create(self, request: Request) -> dict: ...


def require_api_key() -> str:
    key = os.environ.get(API_KEY_ENV, "").strip()
    if not key:
        raise MissingApiKeyError(
            f"{API_KEY_ENV} is not set: `envport generate` calls the Anthropic API and needs a "
            f"key in the environment (export {API_KEY_ENV}=...). Nothing was run. Without a key, "
            f"`envport prompt <env>` prints the prompts and `--replay <run-id>` re-runs a "
            f"recorded run.")
    return key


class AnthropicModel:
    """The Messages API with tool use, retrying rate limits and overloads with backoff.

    The SDK's own retries are off (``max_retries=0``) so that every attempt and wait is ours
    to count and record.
    """

    def __init__(self, http_client: Any = None, max_retries: int = 6, backoff_s: float = 2.0,
                 max_backoff_s: float = 120.0, sleep: Callable[[float], None] = time.sleep):
        from envport.extras import require

        anthropic = require("anthropic", "generate", "envport generate")
        self._anthropic = anthropic
        # http_client: the SDK's own (an httpx2.Client); tests give it a mock transport
        self.client = anthropic.Anthropic(api_key=require_api_key(), max_retries=0,
                                          http_client=http_client)
        self.max_retries, self.backoff_s, self.max_backoff_s = max_retries, backoff_s, max_backoff_s
        self.sleep = sleep
        self.retries = 0  # over the model's life, for the run's report

    def _retryable(self, exc: Exception) -> bool:
        a = self._anthropic
        if isinstance(exc, a.RateLimitError | a.InternalServerError | a.APIConnectionError):
            return True  # 429, 5xx incl. 529 overloaded, network/timeouts
        return isinstance(exc, a.APIStatusError) and exc.status_code in (408, 409, 429, 529)

    def _wait(self, attempt: int, exc: Exception) -> float:
        header = getattr(getattr(exc, "response", None), "headers", {}) or {}
        try:
            after = float(header.get("retry-after", ""))
        except ValueError:
            after = 0.0
        backoff = min(self.max_backoff_s, self.backoff_s * 2 ** attempt) * (0.5 + random.random() / 2)
        return max(after, backoff)

    def create(self, request: Request) -> dict:
        for attempt in range(self.max_retries + 1):
            try:
                message = self.client.messages.create(**request.kwargs())
                return message.model_dump(mode="json", exclude_none=True)
            except Exception as exc:
                if not self._retryable(exc) or attempt == self.max_retries:
                    raise
                self.retries += 1
                self.sleep(self._wait(attempt, exc))
        raise AssertionError("unreachable")


# -- test doubles and recorded runs -------------------------------------------------------------
def text_block(text: str) -> dict:
    return {"type": "text", "text": text}


def tool_use(name: str, input: dict, id: str) -> dict:
    return {"type": "tool_use", "id": id, "name": name, "input": input}


def response(content: Sequence[dict], usage: dict, model: str = DEFAULT_MODEL,
             id: str = "msg_scripted") -> dict:
    """A Messages API response as a dict; ``stop_reason`` follows from the content."""
    uses_tools = any(b["type"] == "tool_use" for b in content)
    return {"id": id, "type": "message", "role": "assistant", "model": model,
            "content": list(content), "stop_reason": "tool_use" if uses_tools else "end_turn",
            "usage": dict(usage)}


# a step of a script: a response, or a function of the request that returns one
ScriptStep = dict | Callable[[Request], dict]


class ScriptedModel:
    """A test double for the LLM only: plays a fixed script of responses, keeps the requests."""

    def __init__(self, steps: Sequence[ScriptStep]):
        self.steps = list(steps)
        self.requests: list[Request] = []

    def create(self, request: Request) -> dict:
        self.requests.append(request)
        if len(self.requests) > len(self.steps):
            raise EnvportError(f"scripted model: no step {len(self.requests)} in a script of "
                               f"{len(self.steps)}")
        step = self.steps[len(self.requests) - 1]
        return step(request) if callable(step) else step


class RecordedModel:
    """Plays a recorded run's responses in order; then hands over to ``live`` (resume) or stops
    (replay). A request that differs from the recorded one means the replay is not faithful.

    ``retries`` counts the recorded calls' retries (as they were made) plus the live model's,
    so that a replayed or resumed run reports what the original calls cost in retries."""

    def __init__(self, recorded: Sequence[dict], live: Model | None = None):
        self.recorded = list(recorded)  # [{"request_sha256", "response", "retries"?}]
        self.live = live
        self.played = 0
        self.replayed_retries = 0

    @property
    def replaying(self) -> bool:
        """Recorded responses are left: the loop is still catching up with the recorded run."""
        return self.played < len(self.recorded)

    @property
    def retries(self) -> int:
        return self.replayed_retries + getattr(self.live, "retries", 0)

    def create(self, request: Request) -> dict:
        from envport.generate.records import request_digest

        if self.played < len(self.recorded):
            entry = self.recorded[self.played]
            self.played += 1
            if entry["request_sha256"] != request_digest(request):
                raise EnvportError(f"replay diverged at model call {self.played}: the request "
                                   f"differs from the recorded one (prompt, tool result or files "
                                   f"changed since the run)")
            self.replayed_retries += int(entry.get("retries") or 0)
            return entry["response"]
        if self.live is None:
            raise EnvportError(f"replay: the recorded run has only {len(self.recorded)} model "
                               f"calls and the loop asked for another")
        return self.live.create(request)
