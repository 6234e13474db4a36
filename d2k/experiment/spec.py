"""The experiment spec (TOML): models, tasks, conditions, seeds, budget, executor."""

from __future__ import annotations

import hashlib
import json
import os
import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from d2k.content import pydantic_problems
from d2k.errors import D2KError


class ModelSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    model: str
    api_base: str
    api_key_env: str | None = None       # the environment variable holding the key (never the key itself)
    temperature: float = 0.0
    top_p: float | None = None
    max_tokens: int | None = 8192
    context_window: int = 128_000
    timeout_s: float = 300.0
    max_retries: int = 3
    concurrency: int = Field(default=1, ge=1)

    def api_key(self) -> str:
        if self.api_key_env:
            key = os.environ.get(self.api_key_env)
            if not key:
                raise D2KError(f"model {self.name}: environment variable {self.api_key_env} is not set")
            return key
        return "not-needed"


class ExecutorSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: Literal["local", "ray"] = "local"
    address: str | None = None           # ray: the cluster address (none: start a local Ray)
    workers: int = Field(default=1, ge=1)  # local without GPUs: concurrent attempts


class ExperimentSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    tasks: list[str] = Field(min_length=1)
    conditions: list[Literal["guided", "unguided"]] = ["guided", "unguided"]
    seeds: list[int] = [0]
    budget: int = Field(default=350, ge=1)
    backend: Literal["auto", "cuda", "interpreter"] = "auto"
    workloads: Literal["bench", "smoke", "all"] = "bench"
    judge_proposals: bool = True         # grade DESIGN.md when an LLM judge is configured
    # how GPU calls are timed, the agent's benchmark tool and the final evaluation alike (d2k eval's
    # --timing); unset: as $D2K_TIMING says where each attempt runs
    timing: Literal["events", "span"] | None = None
    models: list[ModelSpec] = Field(min_length=1)
    executor: ExecutorSpec = ExecutorSpec()

    @model_validator(mode="after")
    def _span_needs_a_gpu(self):
        if self.timing == "span" and self.backend == "interpreter":
            raise ValueError("timing = \"span\" needs a GPU: the CPU interpreter has no device span (backend = "
                             "\"cuda\" or \"auto\")")
        return self

    @property
    def experiment_id(self) -> str:
        return hashlib.sha256(self.name.encode()).hexdigest()[:16]

    def attempts(self) -> list[dict]:
        out = []
        for m in self.models:
            for task in self.tasks:
                for condition in self.conditions:
                    for seed in self.seeds:
                        key = json.dumps([self.name, m.name, task, condition, seed])
                        out.append({"attempt_id": hashlib.sha256(key.encode()).hexdigest()[:16], "model": m.name,
                                    "task_id": task, "condition": condition, "seed": seed})
        return out


def load(path: Path) -> ExperimentSpec:
    """The spec, or a one-line D2KError naming the file and the field."""
    if not path.is_file():
        raise D2KError(f"experiment spec not found: {path}")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise D2KError(f"{path}: invalid TOML: {' '.join(str(exc).split())}") from None
    except UnicodeDecodeError:
        raise D2KError(f"{path}: not UTF-8 text (a binary file?)") from None
    except OSError as exc:
        raise D2KError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        spec = ExperimentSpec.model_validate(data)
    except ValidationError as exc:
        # every mistake at once (up to eight), so a spec is not fixed one error per run
        problems = pydantic_problems(exc, str(path))
        shown = [f"{p.field or '(top level)'}: {p.message}" for p in problems[:8]]
        raise D2KError(f"{path}: " + "; ".join(shown)
                       + (f" (and {len(problems) - 8} more)" if len(problems) > 8 else "")) from None
    names = [m.name for m in spec.models]
    if len(set(names)) != len(names):
        raise D2KError(f"{path}: models.name: model names must be unique")
    return spec
