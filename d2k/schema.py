"""Typed schemas of the benchmark content: the contract between the content files and the code.

Every model forbids unknown fields, so a typo in a TOML or JSONL file is an error that names the
field. ``docs/formats.md`` documents the same formats for authors.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictInt, field_validator, model_validator

from d2k import exprs

TORCH_DTYPES = {
    "float64", "float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2",
    "int64", "int32", "int16", "int8", "uint8", "bool",
}
DTYPE_BYTES = {
    "float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "float8_e4m3fn": 1, "float8_e5m2": 1,
    "int64": 8, "int32": 4, "int16": 2, "int8": 1, "uint8": 1, "bool": 1,
}
ID_PATTERN = re.compile(r"^[a-z][a-z0-9_]*$")
# Bounds that catch nonsense before it reaches a GPU: an axis is a size (int32 indexing), a
# tolerance wider than these accepts wrong results, and a workload's tensors must fit in memory.
MAX_AXIS = 2**31 - 1
MAX_ATOL = 1.0
MAX_RTOL = 0.5
MAX_ABS_ERROR = 1e4            # above fp8 e5m2's ulp at its top binade (8192)
MAX_WORKLOAD_BYTES = {"bench": 16 * 2**30, "smoke": 64 * 2**20}   # inputs + outputs, once
ITEM_PATTERN = re.compile(r"^L([123])\.[A-Za-z][A-Za-z0-9_]*$")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _check_expr(value):
    if isinstance(value, bool):
        raise ValueError("a boolean is not an expression")
    if isinstance(value, str):
        try:
            exprs.parse(value)
        except exprs.ExpressionError as exc:
            raise ValueError(str(exc)) from None
    return value


class TensorSpec(Strict):
    """One input or output of a task's entry point."""

    name: str
    dtype: str | None = None
    shape: list[int | str] = Field(default_factory=list)
    scalar: bool = False
    value: int | float | str | None = None
    init: Literal["randn", "uniform", "randint", "zeros", "ones"] | None = None
    scale: float = 1.0
    low: float = 0.0
    high: float = 1.0
    inplace: bool = False

    @field_validator("name")
    @classmethod
    def _identifier(cls, v: str) -> str:
        if not v.isidentifier():
            raise ValueError(f"{v!r} is not a Python identifier")
        return v

    @field_validator("shape")
    @classmethod
    def _shape_exprs(cls, v):
        return [_check_expr(e) for e in v]

    @field_validator("value")
    @classmethod
    def _value_expr(cls, v):
        return v if v is None else _check_expr(v)

    @model_validator(mode="after")
    def _kind(self):
        if self.scalar:
            if self.value is None:
                raise ValueError("a scalar needs `value` (an expression over axes and params)")
        elif self.dtype is None:
            raise ValueError("a tensor needs `dtype`")
        return self


class Signature(Strict):
    inputs: list[TensorSpec]
    outputs: list[TensorSpec] = Field(min_length=1)

    @model_validator(mode="after")
    def _names(self):
        in_names = [t.name for t in self.inputs]
        if len(set(in_names)) != len(in_names):
            raise ValueError(f"duplicate input names in {in_names}")
        out_names = [t.name for t in self.outputs]
        if len(set(out_names)) != len(out_names):
            raise ValueError(f"duplicate output names in {out_names}")
        for out in self.outputs:
            if out.scalar:
                raise ValueError(f"output {out.name!r}: outputs must be tensors")
            if out.inplace and out.name not in in_names:
                raise ValueError(f"output {out.name!r} is inplace but names no input")
            if not out.inplace and out.name in in_names:
                raise ValueError(f"output {out.name!r} shares an input's name; mark it inplace")
        return self

    @property
    def returned(self) -> list[TensorSpec]:
        return [o for o in self.outputs if not o.inplace]

    @property
    def mutated(self) -> list[str]:
        return [o.name for o in self.outputs if o.inplace]


class ToleranceFields(Strict):
    atol: float | None = Field(default=None, ge=0.0, le=MAX_ATOL, allow_inf_nan=False)
    rtol: float | None = Field(default=None, ge=0.0, le=MAX_RTOL, allow_inf_nan=False)
    matched_ratio: float | None = Field(default=None, gt=0.0, le=1.0, allow_inf_nan=False)
    max_abs_error: float | None = Field(default=None, ge=0.0, le=MAX_ABS_ERROR, allow_inf_nan=False)  # 0: bit-exact


class Tolerance(Strict):
    atol: float = Field(ge=0.0, le=MAX_ATOL, allow_inf_nan=False)
    rtol: float = Field(ge=0.0, le=MAX_RTOL, allow_inf_nan=False)
    matched_ratio: float = Field(default=1.0, gt=0.0, le=1.0, allow_inf_nan=False)
    max_abs_error: float | None = Field(default=None, gt=0.0, le=MAX_ABS_ERROR, allow_inf_nan=False)
    outputs: dict[str, ToleranceFields] = Field(default_factory=dict)
    # Applied on top under the CPU interpreter only, for known interpreter defects (e.g. its fp8
    # rounding); keyed by output name. GPU runs never see these.
    interpreter: dict[str, ToleranceFields] = Field(default_factory=dict)

    def for_output(self, name: str, interpreter: bool = False) -> dict:
        base = {"atol": self.atol, "rtol": self.rtol, "matched_ratio": self.matched_ratio,
                "max_abs_error": self.max_abs_error}
        overrides = [self.outputs.get(name)] + ([self.interpreter.get(name)] if interpreter else [])
        for override in overrides:
            if override:
                base.update({k: v for k, v in override.model_dump().items() if v is not None})
        return base


class Performance(Strict):
    flops: int | float | str = 0
    bytes: int | float | str = "auto"
    peak: Literal["bf16", "fp8", "fp32"] = "bf16"
    # A baseline (the stem of tasks/<id>/baselines/<name>.py) whose GPU time is the eager figure
    # that speedups divide, for a task whose reference is a sequential definition too slow to be a
    # fair eager baseline (and too slow to time): the views mark every speedup taken over it.
    eager_stand_in: str | None = None
    # `compiled` runs torch.compile(..., dynamic=True): for a reference whose host-side loop reads
    # data-dependent sizes (per-expert counts), which a static compile guards on and so recompiles
    # for every new routing (fused_moe_experts, benchmarks/studies/2026-12-05-session25-h100, sec. 4)
    compile_dynamic: bool = False

    @field_validator("eager_stand_in")
    @classmethod
    def _stand_in(cls, v):
        if v is not None and not ID_PATTERN.match(v):
            raise ValueError(f"{v!r}: name a baseline file stem (lower_snake_case, without .py)")
        return v

    @field_validator("flops")
    @classmethod
    def _flops(cls, v):
        return _check_expr(v)

    @field_validator("bytes")
    @classmethod
    def _bytes(cls, v):
        return v if v == "auto" else _check_expr(v)


class Correctness(Strict):
    trials: int = Field(default=3, ge=1, le=20)


class Task(Strict):
    id: str
    catalog: str | None = None
    title: str
    category: Literal["memory", "compute", "latency"]
    description: str = Field(min_length=20)
    entry_point: str = "run"
    signature: Signature
    tolerance: Tolerance
    performance: Performance = Performance()
    correctness: Correctness = Correctness()

    @field_validator("id")
    @classmethod
    def _id(cls, v):
        if not ID_PATTERN.match(v):
            raise ValueError(f"{v!r}: task ids are lower_snake_case")
        return v

    def axes_used(self) -> set[str]:
        """Axis names the shapes and formulas need (scalar values may also use params)."""
        used: set[str] = set()
        for spec in [*self.signature.inputs, *self.signature.outputs]:
            for dim in spec.shape:
                if isinstance(dim, str):
                    used |= exprs.names(dim)
        for formula in (self.performance.flops, self.performance.bytes):
            if isinstance(formula, str) and formula != "auto":
                used |= exprs.names(formula)
        return used

    def dtype_variables(self) -> set[str]:
        return {
            t.dtype
            for t in [*self.signature.inputs, *self.signature.outputs]
            if t.dtype is not None and t.dtype not in TORCH_DTYPES
        }


def _axis_size(value: int) -> int:
    if value < 1:
        raise ValueError(f"{value} is not a size: an axis is at least 1")
    if value > MAX_AXIS:
        raise ValueError(f"{value} is larger than the bound {MAX_AXIS} (2**31 - 1)")
    return value


AxisSize = Annotated[StrictInt, AfterValidator(_axis_size)]


class Workload(Strict):
    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$", max_length=200)
    task: str | None = None
    tag: Literal["bench", "smoke"]
    axes: dict[str, AxisSize]
    dtypes: dict[str, str] = Field(default_factory=dict)
    params: dict[str, Any] = Field(default_factory=dict)
    seed: int = 0
    note: str = ""

    @field_validator("dtypes")
    @classmethod
    def _dtypes(cls, v):
        for var, name in v.items():
            if name not in TORCH_DTYPES:
                raise ValueError(f"dtype variable {var!r}: unknown dtype {name!r}")
        return v


class DesignItem(Strict):
    id: str
    level: Literal[1, 2, 3]
    title: str
    guidance: str = Field(min_length=10)
    criterion: str = Field(min_length=10)
    depends_on: list[str] = Field(default_factory=list)
    related: list[str] = Field(default_factory=list)
    weight: float = Field(default=1.0, gt=0.0)
    signal_hint: str = ""
    signals: list[dict[str, Any]] = Field(default_factory=list)   # all hold -> implemented
    partial: list[dict[str, Any]] = Field(default_factory=list)   # any holds -> at least partial
    no_static_evidence: str = ""   # why no signal can decide this item (then signals stay empty)
    # what counts as partial; without it (or a "Partial: ..." sentence in the criterion) the item is
    # binary (implemented or missing) and no judge verdict of partial is expected
    partial_when: str = ""
    binary: bool = False           # explicitly no partial (also: "Binary: no partial." in the criterion)

    @property
    def partial_defined(self) -> bool:
        """Whether the item has a partial verdict: ``partial_when``, or a "Partial: ..." sentence in
        its criterion; ``binary`` (or "Binary" in the criterion) says it has none."""
        if self.binary:
            return False
        if self.partial_when.strip():
            return True
        if re.search(r"(?i)\bbinary\s*:", self.criterion):
            return False
        return bool(re.search(r"(?i)\bpartial(\s+credit)?\s*:", self.criterion))

    def describe(self) -> str:
        """The item as a judge (LLM or human labeller) reads it: title, guidance, criterion, and
        what counts as partial, or that there is no partial."""
        text = f"L{self.level} {self.id}: {self.title}\nGuidance: {self.guidance}\nCriterion: {self.criterion}"
        if self.partial_when.strip():
            return text + f"\nPartial when: {self.partial_when.strip()}"
        if not self.partial_defined:
            return text + "\nBinary: implemented or missing, never partial."
        return text  # the criterion's own "Partial: ..." sentence says it

    @model_validator(mode="after")
    def _level_matches_id(self):
        match = ITEM_PATTERN.match(self.id)
        if not match:
            raise ValueError(f"item id {self.id!r} must look like L1.name, L2.name or L3.name")
        if int(match.group(1)) != self.level:
            raise ValueError(f"item {self.id!r} has level {self.level}, its id says L{match.group(1)}")
        return self


class Rubric(Strict):
    task: str
    notes: str = ""
    items: list[DesignItem] = Field(min_length=1)
