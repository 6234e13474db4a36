"""What tf32 / tf32x3 block products inside T do to gdn_chunk_prefill's outputs: an fp32 PyTorch
emulation (CPU) of the candidates' chunked pipeline with the kernels' rounding points, run three
times, differing only in how the sixteen 16 x 16 block dots below T's diagonal round their operands
(ieee: fp32 as shipped; tf32: both operands rounded to tf32, fp32 accumulation, as
tl.dot(input_precision="tf32"); tf32x3: hi/lo tf32 split, three products), and compared with the
task's reference (the fp32 token-by-token recurrence) under task.toml's tolerance.

    .venv/bin/python benchmarks/studies/2026-12-05-gdn-tinv/numerics_tf32.py

Emulated rounding points (from the shipped expert and the candidates): Gram of bf16 keys in fp32;
A scaled in fp32; diagonal blocks of T by fp32 substitution; block dots per mode; T, beta exp2(gc) k
and beta v rounded to bf16 before the W and U dots; W, U stored bf16; the walk keeps h in fp32,
stores it bf16, v_new = U - W bf16(h) in fp32 (stored bf16), the update uses bf16(v_new * decay)
and bf16 k; o = scale ((q bf16(h)) exp2(gc) + bf16(masked decayed q k^T) bf16(v_new)), rounded to
bf16. Not emulated: fp32 summation orders of the tensor cores, and the tf32 conversion's tie rule
(round-to-nearest-even here; cvt.rna rounds ties away), neither of which changes the magnitudes.
"""

import importlib.util
import math
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[3]
BT, BC = 64, 16
RCP_LN2 = 1.0 / math.log(2.0)
TOL = {"o": (3e-3, 3e-2, 2e-2, 0.99999), "state": (1.5e-2, 3e-2, 0.1, 0.99999)}


def bf16(x):
    return x.to(torch.bfloat16).float()


def tf32(x):
    """fp32 -> tf32 (10 explicit mantissa bits), round to nearest even."""
    i = x.contiguous().view(torch.int32)
    r = ((i >> 13) & 1) + 0x0FFF
    return ((i + r) & ~0x1FFF).view(torch.float32)


def bdot(a, b, mode, acc=None):
    if mode == "ieee":
        out = a @ b
    elif mode == "tf32":
        out = tf32(a) @ tf32(b)
    else:   # tf32x3
        ah, bh = tf32(a), tf32(b)
        al, bl = tf32(a - ah), tf32(b - bh)
        out = ah @ bl + al @ bh + ah @ bh
    return out if acc is None else out + acc


def t_inverse(A, mode):
    """A [..., 64, 64] strictly lower; T = (I + A)^-1 by 16-blocks as the candidates build it."""
    eye = torch.eye(BC)
    blk = lambda i, j: A[..., i * BC:(i + 1) * BC, j * BC:(j + 1) * BC]
    t = {}
    for i in range(4):   # diagonal blocks: fp32 triangular solve (the kernels' substitution, up to order)
        t[i, i] = torch.linalg.solve_triangular(eye + blk(i, i), eye.expand_as(blk(i, i)), upper=False,
                                                unitriangular=True)
    for i, j in ((1, 0), (2, 1), (3, 2), (2, 0), (3, 1), (3, 0)):
        acc = None
        for l in range(j, i):
            acc = bdot(blk(i, l), t[l, j], mode, acc)
        t[i, j] = -bdot(t[i, i], acc, mode)
    T = torch.zeros_like(A)
    for (i, j), v in t.items():
        T[..., i * BC:(i + 1) * BC, j * BC:(j + 1) * BC] = v
    return T


@torch.no_grad()
def chunked(q, k, v, g, beta, state, scale, mode):
    """One sequence ([L, H, *] inputs, L a multiple of 64 here); returns o [L, Hv, V], S [Hv, V, K]."""
    L, Hqk, K = q.shape
    Hv, V = v.shape[1], v.shape[2]
    rep = Hv // Hqk
    NC = L // BT
    qf = q.float().repeat_interleave(rep, 1).reshape(NC, BT, Hv, K).transpose(1, 2)   # [NC, Hv, 64, K]
    kf = k.float().repeat_interleave(rep, 1).reshape(NC, BT, Hv, K).transpose(1, 2)
    vf = v.float().reshape(NC, BT, Hv, V).transpose(1, 2)
    b = beta.reshape(NC, BT, Hv).transpose(1, 2)                                        # [NC, Hv, 64]
    gc = torch.cumsum(g.reshape(NC, BT, Hv).transpose(1, 2), -1) * RCP_LN2
    strict = torch.ones(BT, BT, dtype=torch.bool).tril(-1)
    incl = torch.ones(BT, BT, dtype=torch.bool).tril()
    diff = gc[..., :, None] - gc[..., None, :]
    A = torch.where(strict, (kf @ kf.transpose(-1, -2)) * b[..., None] * torch.exp2(diff.masked_fill(~strict, 0)), 0.0)
    T = bf16(t_inverse(A, mode))
    W = bf16(T @ bf16(kf * (b * torch.exp2(gc))[..., None]))
    U = bf16(T @ bf16(vf * b[..., None]))
    h = state.float().transpose(-1, -2).clone()          # [Hv, K, V]
    o = torch.empty(NC, Hv, BT, V)
    for c in range(NC):
        hb = bf16(h)
        vn = U[c] - W[c] @ hb
        gl = gc[c, :, -1]
        s = torch.where(incl, (qf[c] @ kf[c].transpose(-1, -2)) * torch.exp2(diff[c].masked_fill(~incl, 0)), 0.0)
        o[c] = bf16(scale * ((qf[c] @ hb) * torch.exp2(gc[c])[..., None] + bf16(s) @ bf16(vn)))
        vd = bf16(vn * torch.exp2(gl[:, None] - gc[c])[..., None])
        h = h * torch.exp2(gl)[:, None, None] + kf[c].transpose(-1, -2) @ vd
    return o.transpose(1, 2).reshape(L, Hv, V), h.transpose(-1, -2)


def errors(got, want, key):
    atol, rtol, cap, ratio = TOL[key]
    err = (got - want).abs()
    ok = (err <= atol + rtol * want.abs()).float().mean().item()
    rel_rms = (err.pow(2).mean().sqrt() / want.pow(2).mean().sqrt()).item()
    passed = ok >= ratio and err.max().item() <= cap
    return f"max {err.max().item():.2e}, rel RMS {rel_rms:.2e}, in tol {ok:.6f}", passed


def main():
    spec = importlib.util.spec_from_file_location("gdn_ref", ROOT / "tasks/gdn_chunk_prefill/reference.py")
    ref = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ref)
    cases = [("make_inputs L=4096 Hqk=2 Hv=4 state", 4096, 2, 4, True, False),
             ("make_inputs L=16384 Hqk=1 Hv=2", 16384, 1, 2, False, False),
             ("clustered keys L=4096 Hqk=2 Hv=4 state", 4096, 2, 4, True, True)]
    all_pass = True
    for label, L, hqk, hv, init, clustered in cases:
        gen = torch.Generator().manual_seed(7)
        axes = {"T": L, "N": 1, "Hqk": hqk, "Hv": hv, "K": 128, "V": 128}
        inp = ref.make_inputs(axes, {"dtype": torch.bfloat16}, {"seq_lens": [L], "init_state": init}, gen, "cpu")
        if clustered:
            # keys drawn near 8 directions (cosine ~0.9 within a cluster): large |A| entries, the
            # hard case for any rounding inside T (not a task workload)
            centers = F.normalize(torch.randn(hqk, 8, 128, generator=gen), dim=-1)
            pick = torch.randint(0, 8, (L, hqk), generator=gen)
            base = centers[torch.arange(hqk)[None, :].expand(L, hqk), pick]
            inp["k"] = F.normalize(base + 0.03 * torch.randn(L, hqk, 128, generator=gen), dim=-1).to(torch.bfloat16)
        scale = 128 ** -0.5
        o_ref, s_ref = ref.reference(inp["q"], inp["k"], inp["v"], inp["g"], inp["beta"], inp["state"],
                                     inp["cu_seqlens"], scale)
        print(f"## {label}", flush=True)
        for mode in ("ieee", "tf32x3", "tf32"):
            o, s = chunked(inp["q"], inp["k"], inp["v"], inp["g"], inp["beta"], inp["state"][0], scale, mode)
            eo, po = errors(o, o_ref.float(), "o")
            es, ps = errors(s, s_ref[0], "state")
            if not clustered:
                all_pass &= po and ps
            print(f"  {mode:7s} o: {eo} [{'pass' if po else 'FAIL'}]; state: {es} [{'pass' if ps else 'FAIL'}]",
                  flush=True)
    print("task-statistics cases all pass:", all_pass)
    return 0 if all_pass else 1


if __name__ == "__main__":
    sys.exit(main())
