"""Work and traffic of a workload, from the task's flop and byte formulas (for speed-of-light)."""

from __future__ import annotations

import math

from d2k import exprs
from d2k.schema import DTYPE_BYTES, Task, TensorSpec, Workload


def namespace(workload: Workload) -> dict:
    """Names an expression may use (see ``exprs.namespace``)."""
    return exprs.namespace(workload.axes, workload.params)


def resolve_dtype(spec: TensorSpec, workload: Workload) -> str:
    return workload.dtypes.get(spec.dtype, spec.dtype) if spec.dtype else "float32"


def tensor_bytes(spec: TensorSpec, workload: Workload) -> int:
    if spec.scalar:
        return 0
    ns = namespace(workload)
    numel = math.prod(int(exprs.evaluate(d, ns)) for d in spec.shape)
    return numel * DTYPE_BYTES[resolve_dtype(spec, workload)]


def workload_flops(task: Task, workload: Workload) -> float:
    return float(exprs.evaluate(task.performance.flops, namespace(workload)))


def workload_bytes(task: Task, workload: Workload) -> float:
    """Fewest bytes the op must move: every input read once, every output written once."""
    if task.performance.bytes != "auto":
        return float(exprs.evaluate(task.performance.bytes, namespace(workload)))
    inputs = {t.name: t for t in task.signature.inputs}
    total = sum(tensor_bytes(t, workload) for t in task.signature.inputs)
    for out in task.signature.outputs:
        # an in-place output was counted once as an input read; add its write
        total += tensor_bytes(inputs[out.name] if out.inplace else out, workload)
    return float(total)
