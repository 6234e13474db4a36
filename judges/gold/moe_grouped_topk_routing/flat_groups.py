"""DeepSeek-V3 biased grouped top-k routing (noaux_tc): the expert Triton implementation,
group view ablated.

Gold-set ablation `flat_groups`: identical to tasks/moe_grouped_topk_routing/expert.py except
that the experts are held as a flat [BLOCK_T, E_P] tile (no [G, E/G] reshape or 3-D load): each
group's top-2 sum comes from a static loop over the G groups, each step masking the flat row
with (expert // EPG == g) and reducing over all E_P experts, and the kept-group mask is
expanded back to the experts by a second loop over the groups.

Computes, for router logits z: [T, E] (fp32) and bias: [E]:

    s = sigmoid(z), sb = s + bias
    gs[t, g] = top-2 sum of sb over group g (G groups of E/G consecutive experts)
    keep the topk_group best groups, then ids = top_k of sb over the kept experts
    w = s[ids] / sum(s[ids]) * routed_scaling_factor          (ties -> lower index)

One fused kernel reads each logit once and writes only the [T, top_k] results:
  * a program owns BLOCK_T tokens as a 2-D [BLOCK_T, E_P] register tile (experts contiguous on
    axis 1, padded to a power of two with -inf);
  * group top-2, one group at a time over the flat row: masked max, knock out the first arg-max
    (lowest index among equal values), masked max again;
  * group selection and expert selection are topk_group / top_k rounds of arg-max-then-mask
    (no sort of 256 values); every arg-max takes the smallest index among the maxima
    (tl.where(x == max, idx, BIG) -> tl.min), which is torch.topk's tie order;
  * the chosen weights are gathered in the same rounds, renormalised and scaled in registers;
  * a one-group model (Kimi-K2: n_group = topk_group = 1) compiles without the group stage.
BLOCK_T and num_warps are chosen from T so that small decode batches still spread over many
SMs while prefill batches put ~16 tokens in a program. On sm_90+ the launch uses programmatic
dependent launch (wait for the router GEMM before the first load, release the next kernel,
e.g. moe_align, right after the loads).
"""
import os

import torch
import triton
import triton.language as tl

_INTERPRET = os.environ.get("TRITON_INTERPRET", "0") == "1"


@triton.jit
def _grouped_topk_kernel(
    Z, BIAS, W_OUT, ID_OUT,
    T, stride_z, scale,
    E: tl.constexpr, EPG: tl.constexpr,            # experts, experts per group
    G: tl.constexpr, TOPK_GROUP: tl.constexpr, K: tl.constexpr,
    G_P: tl.constexpr, E_P: tl.constexpr, K_P: tl.constexpr,
    BLOCK_T: tl.constexpr, USE_PDL: tl.constexpr,
):
    NEG: tl.constexpr = float("-inf")
    pid = tl.program_id(0)
    rows = pid * BLOCK_T + tl.arange(0, BLOCK_T)
    rmask = rows < T
    e = tl.arange(0, E_P)                                          # expert id
    emask = e < E
    mask2 = rmask[:, None] & emask[None, :]

    if USE_PDL:
        tl.extra.cuda.gdc_wait()
    z = tl.load(Z + rows[:, None].to(tl.int64) * stride_z + e[None, :], mask=mask2, other=0.0)
    b = tl.load(BIAS + e, mask=emask, other=0.0)
    if USE_PDL:
        tl.extra.cuda.gdc_launch_dependents()

    s = tl.sigmoid(z.to(tl.float32))
    sb = tl.where(emask[None, :], s + b[None, :], NEG)             # [BLOCK_T, E_P]
    # padded slots get id E, which no pick (< E) can match
    fid = tl.broadcast_to(tl.where(emask, e, E)[None, :], (BLOCK_T, E_P))

    if TOPK_GROUP < G:
        grp = e // EPG                                             # group of each expert
        g = tl.arange(0, G_P)
        gg = tl.broadcast_to(g[None, :], (BLOCK_T, G_P))
        gs = tl.full((BLOCK_T, G_P), NEG, tl.float32)
        # group score: the two largest biased scores of each group, one group at a time
        for gi in tl.static_range(G):
            ing = (grp == gi)[None, :]
            x = tl.where(ing, sb, NEG)
            m1 = tl.max(x, axis=1)
            first = tl.min(tl.where(x == m1[:, None], fid, E), axis=1)
            m2 = tl.max(tl.where(fid == first[:, None], NEG, x), axis=1)
            gs = tl.where(gg == gi, (m1 + m2)[:, None], gs)
        keep = tl.zeros((BLOCK_T, G_P), dtype=tl.int1)
        for _ in tl.static_range(TOPK_GROUP):
            gmax = tl.max(gs, axis=1)
            pick = tl.min(tl.where(gs == gmax[:, None], gg, G_P), axis=1)
            hit = gg == pick[:, None]
            keep = keep | hit
            gs = tl.where(hit, NEG, gs)
        # expand the kept groups back to their experts
        ekeep = tl.zeros((BLOCK_T, E_P), dtype=tl.int1)
        for gi in tl.static_range(G):
            kg = tl.sum(tl.where(keep & (gg == gi), 1, 0), axis=1) > 0
            ekeep = ekeep | (kg[:, None] & (grp == gi)[None, :])
        sb = tl.where(ekeep, sb, NEG)

    kk = tl.arange(0, K_P)[None, :]
    out_w = tl.zeros((BLOCK_T, K_P), dtype=tl.float32)
    out_id = tl.zeros((BLOCK_T, K_P), dtype=tl.int32)
    for k in tl.static_range(K):
        vmax = tl.max(sb, axis=1)
        pick = tl.min(tl.where(sb == vmax[:, None], fid, E), axis=1)     # lowest expert id
        hit = fid == pick[:, None]
        wk = tl.sum(tl.where(hit, s, 0.0), axis=1)
        sb = tl.where(hit, NEG, sb)
        out_w = tl.where(kk == k, wk[:, None], out_w)
        out_id = tl.where(kk == k, pick[:, None], out_id)

    out_w = out_w * (scale / tl.sum(out_w, axis=1))[:, None]
    omask = rmask[:, None] & (kk < K)
    offs = rows[:, None] * K + kk
    tl.store(W_OUT + offs, out_w, mask=omask)
    tl.store(ID_OUT + offs, out_id, mask=omask)


_pdl_ok = {}


def _config(T, E):
    """(BLOCK_T, num_warps): ~16 tokens per program for big T, down to 1 for tiny batches so
    that at least ~2 programs per SM-pair exist; ~8 fp32 elements per thread."""
    if T >= 4096:
        block_t = 16
    elif T >= 1024:
        block_t = 8
    elif T >= 256:
        block_t = 4
    else:
        block_t = 1 if T <= 128 else 2
    e_p = triton.next_power_of_2(E)
    warps = max(1, min(8, block_t * e_p // 256))
    return block_t, warps


def run(router_logits, bias, n_group, topk_group, top_k, routed_scaling_factor):
    z = router_logits
    if z.stride(-1) != 1:
        z = z.contiguous()
    bias = bias.contiguous()
    T, E = z.shape
    G, TG, K = int(n_group), int(topk_group), int(top_k)
    epg = E // G
    w = torch.empty((T, K), dtype=torch.float32, device=z.device)
    ids = torch.empty((T, K), dtype=torch.int32, device=z.device)
    if T == 0:
        return w, ids
    block_t, warps = _config(T, E)
    grid = (triton.cdiv(T, block_t),)
    args = (z, bias, w, ids, T, z.stride(0), float(routed_scaling_factor))
    meta = dict(E=E, EPG=epg, G=G, TOPK_GROUP=TG, K=K,
                G_P=triton.next_power_of_2(G), E_P=triton.next_power_of_2(E),
                K_P=max(2, triton.next_power_of_2(K)), BLOCK_T=block_t, num_warps=warps)
    if _INTERPRET or not z.is_cuda:
        _grouped_topk_kernel[grid](*args, USE_PDL=False, **meta)
        return w, ids
    dev = z.device.index if z.device.index is not None else torch.cuda.current_device()
    ok = _pdl_ok.get(dev)
    if ok is None:
        ok = torch.cuda.get_device_capability(z.device)[0] >= 9
        if ok:
            try:
                _grouped_topk_kernel[grid](*args, USE_PDL=True, launch_pdl=True, **meta)
                _pdl_ok[dev] = True
                return w, ids
            except Exception:
                ok = False
        _pdl_ok[dev] = ok
    if ok:
        _grouped_topk_kernel[grid](*args, USE_PDL=True, launch_pdl=True, **meta)
    else:
        _grouped_topk_kernel[grid](*args, USE_PDL=False, **meta)
    return w, ids
