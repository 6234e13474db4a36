"""DeepSeek-V3 biased grouped top-k routing (noaux_tc): the expert Triton implementation,
single fused kernel ablated.

Gold-set ablation `two_kernels`: identical to tasks/moe_grouped_topk_routing/expert.py except
that the group scores are produced by a separate kernel that writes them to a [T, G] float32
buffer in global memory; the selection kernel then re-reads the logits and the bias, reads the
group scores back from that buffer, and picks the groups and the experts (two launches per
call for grouped models).

Computes, for router logits z: [T, E] (fp32) and bias: [E]:

    s = sigmoid(z), sb = s + bias
    gs[t, g] = top-2 sum of sb over group g (G groups of E/G consecutive experts)
    keep the topk_group best groups, then ids = top_k of sb over the kept experts
    w = s[ids] / sum(s[ids]) * routed_scaling_factor          (ties -> lower index)

Two kernels: a group-score kernel writes gs [T, G]; the selection kernel writes [T, top_k]:
  * a program owns BLOCK_T tokens as a 3-D [BLOCK_T, G_P, EPG_P] register tile (the group view:
    groups on axis 1, the E/G experts of a group on axis 2, padded to powers of two with -inf),
    loaded with one contiguous vector per group row;
  * group top-2 (first kernel): max, knock out the first arg-max (lowest index among equal
    values), max again; stored to the [T, G] buffer;
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
def _group_score_kernel(
    Z, BIAS, GS,
    T, stride_z,
    EPG: tl.constexpr, G: tl.constexpr, G_P: tl.constexpr, EPG_P: tl.constexpr,
    BLOCK_T: tl.constexpr, USE_PDL: tl.constexpr,
):
    NEG: tl.constexpr = float("-inf")
    pid = tl.program_id(0)
    rows = pid * BLOCK_T + tl.arange(0, BLOCK_T)
    rmask = rows < T
    g = tl.arange(0, G_P)
    j = tl.arange(0, EPG_P)
    expert = g[:, None] * EPG + j[None, :]                        # [G_P, EPG_P] expert id
    emask = (g[:, None] < G) & (j[None, :] < EPG)
    mask3 = rmask[:, None, None] & emask[None, :, :]
    if USE_PDL:
        tl.extra.cuda.gdc_wait()
    z = tl.load(Z + rows[:, None, None].to(tl.int64) * stride_z + expert[None, :, :],
                mask=mask3, other=0.0)
    b = tl.load(BIAS + expert, mask=emask, other=0.0)
    if USE_PDL:
        tl.extra.cuda.gdc_launch_dependents()
    s = tl.sigmoid(z.to(tl.float32))
    sb = tl.where(emask[None, :, :], s + b[None, :, :], NEG)
    jj = tl.broadcast_to(j[None, None, :], (BLOCK_T, G_P, EPG_P))
    m1 = tl.max(sb, axis=2)
    first = tl.min(tl.where(sb == m1[:, :, None], jj, EPG_P), axis=2)
    m2 = tl.max(tl.where(jj == first[:, :, None], NEG, sb), axis=2)
    tl.store(GS + rows[:, None] * G + g[None, :], m1 + m2,
             mask=rmask[:, None] & (g < G)[None, :])


@triton.jit
def _grouped_topk_kernel(
    Z, BIAS, GS, W_OUT, ID_OUT,
    T, stride_z, scale,
    E: tl.constexpr, EPG: tl.constexpr,            # experts, experts per group
    G: tl.constexpr, TOPK_GROUP: tl.constexpr, K: tl.constexpr,
    G_P: tl.constexpr, EPG_P: tl.constexpr, K_P: tl.constexpr,
    BLOCK_T: tl.constexpr, USE_PDL: tl.constexpr,
):
    NEG: tl.constexpr = float("-inf")
    FLAT: tl.constexpr = G_P * EPG_P
    pid = tl.program_id(0)
    rows = pid * BLOCK_T + tl.arange(0, BLOCK_T)
    rmask = rows < T
    g = tl.arange(0, G_P)
    j = tl.arange(0, EPG_P)
    expert = g[:, None] * EPG + j[None, :]                        # [G_P, EPG_P] expert id
    emask = (g[:, None] < G) & (j[None, :] < EPG)
    mask3 = rmask[:, None, None] & emask[None, :, :]

    if USE_PDL:
        tl.extra.cuda.gdc_wait()
    z = tl.load(Z + rows[:, None, None].to(tl.int64) * stride_z + expert[None, :, :],
                mask=mask3, other=0.0)
    b = tl.load(BIAS + expert, mask=emask, other=0.0)
    if USE_PDL:
        tl.extra.cuda.gdc_launch_dependents()

    s = tl.sigmoid(z.to(tl.float32))
    sb = tl.where(emask[None, :, :], s + b[None, :, :], NEG)       # [BLOCK_T, G_P, EPG_P]

    if TOPK_GROUP < G:
        # group scores from the first kernel's [T, G] buffer
        gs = tl.load(GS + rows[:, None] * G + g[None, :],
                     mask=rmask[:, None] & (g < G)[None, :], other=NEG)   # [BLOCK_T, G_P]
        gg = tl.broadcast_to(g[None, :], (BLOCK_T, G_P))
        keep = tl.zeros((BLOCK_T, G_P), dtype=tl.int1)
        for _ in tl.static_range(TOPK_GROUP):
            gmax = tl.max(gs, axis=1)
            pick = tl.min(tl.where(gs == gmax[:, None], gg, G_P), axis=1)
            hit = gg == pick[:, None]
            keep = keep | hit
            gs = tl.where(hit, NEG, gs)
        sb = tl.where(keep[:, :, None], sb, NEG)

    # top_k rounds over the flattened (group, expert) axis; flat index order = expert id order
    flat = tl.reshape(sb, (BLOCK_T, FLAT))
    sflat = tl.reshape(s, (BLOCK_T, FLAT))
    # padded slots get id E, which no pick (< E) can match
    fid = tl.broadcast_to(tl.reshape(tl.where(emask, expert, E), (FLAT,))[None, :], (BLOCK_T, FLAT))
    kk = tl.arange(0, K_P)[None, :]
    out_w = tl.zeros((BLOCK_T, K_P), dtype=tl.float32)
    out_id = tl.zeros((BLOCK_T, K_P), dtype=tl.int32)
    for k in tl.static_range(K):
        vmax = tl.max(flat, axis=1)
        pick = tl.min(tl.where(flat == vmax[:, None], fid, E), axis=1)   # lowest expert id
        hit = fid == pick[:, None]
        wk = tl.sum(tl.where(hit, sflat, 0.0), axis=1)
        flat = tl.where(hit, NEG, flat)
        out_w = tl.where(kk == k, wk[:, None], out_w)
        out_id = tl.where(kk == k, pick[:, None], out_id)

    out_w = out_w * (scale / tl.sum(out_w, axis=1))[:, None]
    omask = rmask[:, None] & (kk < K)
    offs = rows[:, None] * K + kk
    tl.store(W_OUT + offs, out_w, mask=omask)
    tl.store(ID_OUT + offs, out_id, mask=omask)


_pdl_ok = {}


def _launch(kernel, grid, args, kwargs, device):
    if _INTERPRET or device.type != "cuda":
        kernel[grid](*args, USE_PDL=False, **kwargs)
        return
    dev = device.index if device.index is not None else torch.cuda.current_device()
    ok = _pdl_ok.get(dev)
    if ok is None:
        ok = torch.cuda.get_device_capability(device)[0] >= 9
        if ok:
            try:
                kernel[grid](*args, USE_PDL=True, launch_pdl=True, **kwargs)
                _pdl_ok[dev] = True
                return
            except Exception:
                ok = False
        _pdl_ok[dev] = ok
    if ok:
        kernel[grid](*args, USE_PDL=True, launch_pdl=True, **kwargs)
    else:
        kernel[grid](*args, USE_PDL=False, **kwargs)


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
    G_P, EPG_P = triton.next_power_of_2(G), triton.next_power_of_2(epg)
    gs = torch.empty((T, G), dtype=torch.float32, device=z.device) if TG < G else w
    if TG < G:
        _launch(_group_score_kernel, grid, (z, bias, gs, T, z.stride(0)),
                dict(EPG=epg, G=G, G_P=G_P, EPG_P=EPG_P, BLOCK_T=block_t, num_warps=warps),
                z.device)
    args = (z, bias, gs, w, ids, T, z.stride(0), float(routed_scaling_factor))
    meta = dict(E=E, EPG=epg, G=G, TOPK_GROUP=TG, K=K, G_P=G_P, EPG_P=EPG_P,
                K_P=max(2, triton.next_power_of_2(K)), BLOCK_T=block_t, num_warps=warps)
    _launch(_grouped_topk_kernel, grid, args, meta, z.device)
    return w, ids
