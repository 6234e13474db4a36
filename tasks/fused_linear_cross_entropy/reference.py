"""Fused linear + cross-entropy (LM head and loss) with its gradients.

    logits = (x @ W^T)                      x: [BT, H], W: [V, H] (bf16), logits in bf16
    loss   = mean_t ( logsumexp(logits[t].float()) - logits[t, y[t]].float() )     (fp32)
    dx     = d loss / d x   [BT, H] bf16,    dW = d loss / d W   [V, H] bf16

exactly what autograd gives for F.cross_entropy((x @ W.T).float(), y): with
p = softmax(logits.float()) and g = (p - onehot(y)) / BT rounded to bf16,
dx = g @ W and dW = g^T @ x (fp32 accumulation, rounded to bf16).

`canonicalize` multiplies dx and dW by the power of two nearest BT (exact in floating point),
so the tolerances apply to per-token gradient sums of a size that does not depend on BT.
"""
import math

import torch
import torch.nn.functional as F


def reference(x, W, y):
    xg = x.detach().clone().requires_grad_(True)
    Wg = W.detach().clone().requires_grad_(True)
    loss = F.cross_entropy((xg @ Wg.T).float(), y)
    dx, dW = torch.autograd.grad(loss, (xg, Wg))
    return loss.detach().to(torch.float32), dx, dW


def grad_scale(bt: int) -> float:
    """The power of two nearest BT: undoes the mean's 1/BT without rounding."""
    return 2.0 ** round(math.log2(max(int(bt), 1)))


def canonicalize(outputs: dict, inputs: dict) -> dict:
    out = dict(outputs)
    s = grad_scale(inputs["x"].shape[0])
    for name in ("dx", "dW"):
        g = out.get(name)
        if isinstance(g, torch.Tensor) and g.is_floating_point():
            out[name] = g * s                       # dtype kept; a power of two is exact
    return out


def make_inputs(axes: dict, dtypes: dict, params: dict, generator: torch.Generator, device) -> dict:
    """x ~ N(0, 1) (a normed hidden state), W ~ N(0, (2 / sqrt(H))^2) so the logits have a
    standard deviation of ~2, and targets uniform over the vocabulary (all valid). Chosen (‡)."""
    BT, H, V = axes["BT"], axes["H"], axes["V"]
    dtype = dtypes["dtype"]
    x = torch.randn((BT, H), generator=generator, device=device, dtype=torch.float32).to(dtype)
    W = torch.randn((V, H), generator=generator, device=device, dtype=torch.float32)
    W = W.mul_(2.0 / math.sqrt(H)).to(dtype)
    y = torch.randint(0, V, (BT,), generator=generator, device=device, dtype=torch.int64)
    return {"x": x, "W": W, "y": y}
