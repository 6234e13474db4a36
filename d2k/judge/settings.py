"""Where the LLM judge's endpoint and options come from.

Precedence, highest first: command-line options; environment variables ``D2K_JUDGE_MODEL``,
``D2K_JUDGE_API_BASE``, ``D2K_JUDGE_API_KEY`` (and ``D2K_JUDGE_TEMPERATURE``,
``D2K_JUDGE_CONCURRENCY``, ``D2K_JUDGE_TIMEOUT``, ``D2K_JUDGE_RETRIES``, ``D2K_JUDGE_CACHE``); the ``[judge]`` table of
``d2k.toml`` in the working directory (else in the content root); the defaults below. Any
OpenAI-compatible server works (OpenAI, vLLM, SGLang): a model name without a provider prefix is
sent as ``openai/<model>`` to ``api_base``.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, fields
from pathlib import Path

from d2k.errors import D2KError

ENV = {
    "model": "D2K_JUDGE_MODEL", "api_base": "D2K_JUDGE_API_BASE", "api_key": "D2K_JUDGE_API_KEY",
    "temperature": "D2K_JUDGE_TEMPERATURE", "concurrency": "D2K_JUDGE_CONCURRENCY",
    "timeout_s": "D2K_JUDGE_TIMEOUT", "retries": "D2K_JUDGE_RETRIES", "cache_dir": "D2K_JUDGE_CACHE",
}


@dataclass
class JudgeSettings:
    model: str | None = None
    api_base: str | None = None
    api_key: str | None = None
    temperature: float = 0.0
    max_tokens: int = 2048
    concurrency: int = 4
    retries: int = 3            # transport retries (5xx, timeouts) with exponential backoff
    parse_retries: int = 2      # re-asks after a reply that cannot be parsed (malformed, refusal)
    timeout_s: float = 120.0
    cache_dir: str = ".d2k/cache/dspy"

    @property
    def provider_model(self) -> str:
        if not self.model:
            raise D2KError("no judge model configured: set D2K_JUDGE_MODEL (and D2K_JUDGE_API_BASE) "
                           "or a [judge] table in d2k.toml")
        return self.model if "/" in self.model else f"openai/{self.model}"


def _coerce(name: str, value):
    kinds = {f.name: f.type for f in fields(JudgeSettings)}
    kind = kinds[name]
    try:
        if kind in ("float", float):
            return float(value)
        if kind in ("int", int):
            return int(value)
    except (TypeError, ValueError):
        raise D2KError(f"judge setting {name}: {value!r} is not a number") from None
    return value


def _toml(root: Path | None) -> dict:
    for folder in [Path.cwd(), *([root] if root else [])]:
        path = folder / "d2k.toml"
        if path.is_file():
            try:
                table = tomllib.loads(path.read_text(encoding="utf-8")).get("judge", {})
            except tomllib.TOMLDecodeError as exc:
                raise D2KError(f"{path}: invalid TOML: {exc}") from None
            unknown = set(table) - {f.name for f in fields(JudgeSettings)}
            if unknown:
                raise D2KError(f"{path}: [judge] has unknown key(s) {', '.join(sorted(unknown))}")
            return table
    return {}


def load(overrides: dict | None = None, root: Path | None = None) -> JudgeSettings:
    values: dict = {}
    values.update(_toml(root))
    for name, var in ENV.items():
        if os.environ.get(var):
            values[name] = os.environ[var]
    values.update({k: v for k, v in (overrides or {}).items() if v is not None})
    return JudgeSettings(**{k: _coerce(k, v) for k, v in values.items()})
