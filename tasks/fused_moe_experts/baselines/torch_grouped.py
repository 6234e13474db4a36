"""Production baseline: PyTorch's grouped GEMM (torch._grouped_mm, CUTLASS on sm_90).

    for every token t and slot j < K, with e = topk_ids[t, j]:
        h = silu(x[t] @ w1[e, :I].T) * (x[t] @ w1[e, I:].T)
        y[t] += topk_weights[t, j] * (h @ w2[e].T)

The pairs are sorted by expert on the device (argsort + bincount + cumsum give the group
offsets; no host synchronisation), x is permuted into expert order with index_select, and
each projection is one torch._grouped_mm over all experts (a 2-D [T*K, in] operand against
the 3-D weight stack, viewed transposed: no weight copy). SiLU-and-mul, the routing weights
and the sum over the K slots are ordinary torch ops. This is the path torchtitan / HF use for
bf16 MoE layers; no Triton.

torch._grouped_mm takes bfloat16 operands with 16-byte aligned rows (H and I multiples of 8).
For other dtypes (the CPU interpreter's float16) or unaligned sizes the same steps run with
one torch.matmul per expert (and one device-to-host copy of the counts).
"""
import torch
import torch.nn.functional as F

if not hasattr(torch, "_grouped_mm"):
    raise ImportError("torch._grouped_mm (PyTorch >= 2.8)")


def _grouped_ok(x, H, I):
    return x.dtype == torch.bfloat16 and H % 8 == 0 and I % 8 == 0 and x.data_ptr() % 16 == 0


def run(x, w1, w2, topk_weights, topk_ids):
    T, H = x.shape
    E, two_i, _ = w1.shape
    I = two_i // 2
    K = topk_ids.shape[1]
    flat = topk_ids.reshape(-1).long()
    order = torch.argsort(flat, stable=True)            # pair ids grouped by expert
    counts = torch.bincount(flat, minlength=E)
    tok = order // K
    xs = x.index_select(0, tok)                          # [T*K, H] in expert order
    if _grouped_ok(x, H, I):
        offs = torch.cumsum(counts, 0).to(torch.int32)
        gu = torch._grouped_mm(xs, w1.transpose(1, 2), offs=offs)        # [T*K, 2I]
        h = (F.silu(gu[:, :I].float()) * gu[:, I:].float()).to(x.dtype)
        o = torch._grouped_mm(h, w2.transpose(1, 2), offs=offs)          # [T*K, H]
    else:
        o = torch.empty((T * K, H), dtype=x.dtype, device=x.device)
        start = 0
        for e, n in enumerate(counts.tolist()):
            if n == 0:
                continue
            sel = slice(start, start + n)
            start += n
            gu = xs[sel] @ w1[e].T
            h = (F.silu(gu[:, :I].float()) * gu[:, I:].float()).to(x.dtype)
            o[sel] = h @ w2[e].T
    weighted = o.float() * topk_weights.reshape(-1)[order].float()[:, None]
    out = torch.empty_like(weighted)
    out[order] = weighted                                # back to pair order t*K + j
    return out.view(T, K, H).sum(dim=1).to(x.dtype)
