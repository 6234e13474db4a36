"""Deterministic construction of a workload's inputs from its seed (worker side).

The job carries the task's signature as plain dicts (see ``d2k.job_payload``); a task's reference module
may define ``make_inputs`` for inputs the generic initialisers cannot express.
"""

from __future__ import annotations

import math

import torch

from d2k import exprs

# The Triton interpreter has no bfloat16 (it keeps bf16 as raw uint16): CPU smoke runs feed float16.
INTERPRETER_SUBSTITUTES = {"bfloat16": "float16"}


def torch_dtype(name: str) -> torch.dtype:
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"unknown dtype {name!r}")
    return dtype


def resolve_dtypes(workload: dict, interpreter: bool) -> dict[str, torch.dtype]:
    names = dict(workload.get("dtypes", {}))
    if interpreter:
        names = {k: INTERPRETER_SUBSTITUTES.get(v, v) for k, v in names.items()}
    return {k: torch_dtype(v) for k, v in names.items()}


def spec_dtype(spec: dict, dtypes: dict[str, torch.dtype], interpreter: bool) -> torch.dtype:
    name = spec.get("dtype") or "float32"
    if name in dtypes:
        return dtypes[name]
    if interpreter:
        name = INTERPRETER_SUBSTITUTES.get(name, name)
    return torch_dtype(name)


def namespace(workload: dict) -> dict:
    return exprs.namespace(workload["axes"], workload.get("params"))


def spec_shape(spec: dict, workload: dict) -> tuple[int, ...]:
    ns = namespace(workload)
    return tuple(int(exprs.evaluate(d, ns)) for d in spec.get("shape", []))


def _generic(spec: dict, shape, dtype, generator, device) -> torch.Tensor:
    init = spec.get("init") or ("randn" if dtype.is_floating_point else "randint")
    if init == "zeros":
        return torch.zeros(shape, dtype=dtype, device=device)
    if init == "ones":
        return torch.ones(shape, dtype=dtype, device=device)
    if init == "randint":
        low, high = int(spec.get("low", 0)), int(spec.get("high", 1) or 1)
        if high <= low:
            high = low + 1
        return torch.randint(low, high, shape, generator=generator, device=device, dtype=torch.int64).to(dtype)
    if init == "uniform":
        low, high = float(spec.get("low", 0.0)), float(spec.get("high", 1.0))
        t = torch.rand(shape, generator=generator, device=device, dtype=torch.float32)
        return (t * (high - low) + low).to(dtype)
    t = torch.randn(shape, generator=generator, device=device, dtype=torch.float32)
    scale = float(spec.get("scale", 1.0))
    if scale != 1.0:
        t.mul_(scale)
    return t.to(dtype)


def make_generator(seed: int, device) -> torch.Generator:
    generator = torch.Generator(device=device)
    generator.manual_seed(int(seed) % (2**63 - 1))
    return generator


def build_inputs(signature: dict, workload: dict, seed: int, device, interpreter: bool, reference_module) -> dict:
    """All inputs of one call, keyed by name, in signature order."""
    dtypes = resolve_dtypes(workload, interpreter)
    generator = make_generator(seed, device)
    custom = {}
    maker = getattr(reference_module, "make_inputs", None)
    if maker is not None:
        custom = maker(
            axes=dict(workload["axes"]), dtypes=dtypes, params=dict(workload.get("params", {})),
            generator=generator, device=device,
        ) or {}
    inputs = {}
    ns = namespace(workload)
    for spec in signature["inputs"]:
        name = spec["name"]
        if name in custom:
            inputs[name] = custom[name]
        elif spec.get("scalar"):
            inputs[name] = exprs.evaluate(spec["value"], ns)
        else:
            shape = spec_shape(spec, workload)
            inputs[name] = _generic(spec, shape, spec_dtype(spec, dtypes, interpreter), generator, device)
    # the harness, not make_inputs, is the authority on shape and dtype
    for spec in signature["inputs"]:
        value = inputs[spec["name"]]
        if spec.get("scalar") or not isinstance(value, torch.Tensor):
            continue
        want_shape = spec_shape(spec, workload)
        want_dtype = spec_dtype(spec, dtypes, interpreter)
        if tuple(value.shape) != want_shape or value.dtype != want_dtype:
            raise ValueError(
                f"make_inputs built {spec['name']} as {tuple(value.shape)} {value.dtype}, "
                f"the signature says {want_shape} {want_dtype}"
            )
    return inputs


def tensor_bytes(inputs: dict) -> int:
    return sum(t.numel() * t.element_size() for t in inputs.values() if isinstance(t, torch.Tensor))


def clone_inputs(inputs: dict) -> dict:
    """A copy of an input set (tensors cloned); used by the timing studies in benchmarks/."""
    return {k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in inputs.items()}


def numel(shape) -> int:
    return math.prod(shape)
