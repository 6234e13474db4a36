"""The agent loop: chat completions with tool calling over any OpenAI-compatible endpoint.

One assistant message is one turn. Tool calls are executed in order and answered as tool messages
(malformed arguments and unknown tools are answered as tool errors; the turn counts). The loop ends
at ``submit`` or when the budget is spent; then the last correct candidate (else the last written
file) is taken. When the conversation grows past the model's context window, the oldest tool
results are cut to a note saying so. Endpoint errors and timeouts are retried by the client with
backoff; an endpoint that keeps failing ends the attempt with status ``endpoint_error``.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

from d2k.agent.tools import SCHEMAS, Tools

CHARS_PER_TOKEN = 4  # a conservative estimate for deciding when to cut old tool output


@dataclass
class ModelConfig:
    name: str                      # a label for tables
    model: str                     # the model id sent to the endpoint
    api_base: str
    api_key: str = "not-needed"
    temperature: float = 0.0
    top_p: float | None = None
    max_tokens: int | None = 8192
    context_window: int = 128_000
    timeout_s: float = 300.0
    max_retries: int = 3
    concurrency: int = 1


@dataclass
class Turn:
    index: int
    role_content: str | None
    tool_calls: list[dict]
    tool_results: list[dict]
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_s: float
    harness_s: float               # from the reply to the end of its tool calls (tool execution included)
    note: str = ""


@dataclass
class AgentResult:
    status: str                    # submitted | budget_exhausted | endpoint_error
    submission: str | None
    choice: str                    # how the submission was chosen
    turns: list[Turn] = field(default_factory=list)
    detail: str = ""


def _estimate_tokens(messages: list[dict]) -> int:
    return sum(len(json.dumps(m, default=str)) for m in messages) // CHARS_PER_TOKEN


def _truncate_old_tool_output(messages: list[dict], limit_tokens: int) -> int:
    """Cut the oldest tool results until the estimate fits; returns how many were cut."""
    cut = 0
    for m in messages:
        if _estimate_tokens(messages) <= limit_tokens:
            break
        if m.get("role") == "tool" and not m.get("_cut"):
            size = len(m.get("content") or "")
            m["content"] = f"[older tool output of {size} characters removed to fit the context window]"
            m["_cut"] = True
            cut += 1
    return cut


def _message_dict(msg) -> dict:
    out = {"role": "assistant", "content": msg.content}
    if msg.tool_calls:
        out["tool_calls"] = [{"id": c.id, "type": "function",
                              "function": {"name": c.function.name, "arguments": c.function.arguments}}
                             for c in msg.tool_calls]
    return out


def run_agent(config: ModelConfig, system: str, prompt: str, tools: Tools, budget: int,
              on_turn=None, client=None) -> AgentResult:
    import openai

    client = client or openai.OpenAI(base_url=config.api_base, api_key=config.api_key,
                                     timeout=config.timeout_s, max_retries=config.max_retries)
    messages: list[dict] = [{"role": "system", "content": system}, {"role": "user", "content": prompt}]
    turns: list[Turn] = []
    status, detail = "budget_exhausted", ""
    for index in range(budget):
        note = ""
        limit = int(config.context_window * 0.8)
        if _estimate_tokens(messages) > limit:
            n = _truncate_old_tool_output(messages, limit)
            note = f"cut {n} old tool result(s) to fit the context window"
        request = {"model": config.model, "messages": [{k: v for k, v in m.items() if not k.startswith("_")} for m in messages],
                   "tools": SCHEMAS, "temperature": config.temperature}
        if config.top_p is not None:
            request["top_p"] = config.top_p
        if config.max_tokens:
            request["max_tokens"] = config.max_tokens
        t0 = time.perf_counter()
        try:
            response = client.chat.completions.create(**request)
        except openai.OpenAIError as exc:  # the client already retried with backoff
            status, detail = "endpoint_error", f"{type(exc).__name__}: {str(exc)[:300]}"
            break
        latency = time.perf_counter() - t0
        h0 = time.perf_counter()
        choice = response.choices[0] if response.choices else None
        msg = choice.message if choice else None
        usage = getattr(response, "usage", None)
        if msg is None:
            status, detail = "endpoint_error", "the endpoint returned no choices"
            break
        messages.append(_message_dict(msg))
        results = []
        for call in msg.tool_calls or []:
            ok, text = tools.call(call.function.name, call.function.arguments)
            results.append({"id": call.id, "name": call.function.name, "ok": ok, "result": text})
            messages.append({"role": "tool", "tool_call_id": call.id, "content": text})
            if tools.state.submitted:
                break
        if not msg.tool_calls:
            nudge = "Continue with the tools. Call submit(path) when your solution is ready."
            messages.append({"role": "user", "content": nudge})
            note = (note + "; " if note else "") + "no tool call: nudged"
        turn = Turn(index, msg.content, [{"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
                                         for c in msg.tool_calls or []], results,
                    getattr(usage, "prompt_tokens", None), getattr(usage, "completion_tokens", None),
                    latency, 0.0, note)
        turn.harness_s = time.perf_counter() - h0
        turns.append(turn)
        if on_turn:
            on_turn(turn)
        if tools.state.submitted:
            status = "submitted"
            break
    submission, how = tools.final_choice()
    return AgentResult(status, submission, how, turns, detail)
