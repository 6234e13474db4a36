"""Row softmax in fp32 over vocabulary-sized rows.

    y[m, :] = softmax(x[m, :].float())  = exp(xf - max(xf)) / sum(exp(xf - max(xf)))

x: [M, N] (bfloat16 on the GPU, float16 under the CPU interpreter); y: [M, N] float32.
"""
import torch


# Each timed call gets a new draw of the inputs (d2k/execution/wire.refill): the perturbation
# between calls only moves values within a row, so each row's max and sum of exponentials would be
# the same on every call, and a solution could keep them from its first call and skip a pass
# over the vocabulary (the row-statistics cache of session 21, SECURITY.md).
FRESH_INPUTS_PER_CALL = True


def reference(x):
    return torch.softmax(x.float(), dim=-1)


def make_inputs(axes: dict, dtypes: dict, params: dict, generator: torch.Generator, device) -> dict:
    """x = 3 * randn + a per-row offset ~ U(0, 100), rounded to the workload dtype.

    The spread (std 3) makes each row's distribution peaked, so the max matters; the offsets
    make exp(x) without the max subtraction overflow fp32 (e^89 > FLT_MAX) on a fifth of the
    rows, and give rows different maxima, so a kernel that mixes rows up fails."""
    M, N = axes["M"], axes["N"]
    x = torch.randn((M, N), generator=generator, device=device, dtype=torch.float32).mul_(3.0)
    x += torch.rand((M, 1), generator=generator, device=device, dtype=torch.float32) * 100.0
    return {"x": x.to(dtypes["dtype"])}
