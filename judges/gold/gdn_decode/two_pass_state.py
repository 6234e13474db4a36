"""Gated delta rule decode step (Qwen3-Next GDN), state pool updated in place: the expert
Triton implementation, the single pass over the state ablated.

Gold-set ablation `two_pass_state`: identical to tasks/gdn_decode/expert.py except that the
step runs as two kernels over the same grid: the first reads each state tile to compute
u = exp(g) * (S @ k^) and writes u ([B, HV, V] fp32); the second reads the state tile again,
applies the decay and the update beta * (v - u) k^T, stores it in place and computes the
output. Each state element is read twice from memory and written once.

For sequence n, value head h (qk head h // (HV // HQK)), S = state[state_indices[n], h] ([V, K],
k-last), all in fp32:

    q^, k^ = q / sqrt(|q|^2 + 1e-6), k / sqrt(|k|^2 + 1e-6)
    g = -exp(A_log[h]) * softplus(a + dt_bias[h]),   beta = sigmoid(b)
    S = S * exp(g);   v' = beta * (v - S @ k^);   S = S + outer(v', k^)
    o = scale * S @ q^          (stored in q's dtype);  S written back to its slot

Design (memory-bound: each touched state is 64 KB of fp32 that must be read and written once):
  * one program per (sequence, value head, block of BV state rows): the grid is
    B * HV * cdiv(V, BV), decomposed from one program id (adjacent programs share a head, so
    its q / k / v come from L2); BV shrinks for small batches (B = 1: 4 rows, 512 programs)
    so every SM gets work, and is 32 for large ones ([32, 128] fp32 = 16 KB per program);
  * two kernels: the first loads the program's [BV, K] state tile and writes
    u = exp(g) * (S @ k^); the second loads the tile again, decays it, adds (beta * (v - u))
    k^T, stores it once, in place, at the same address (the slot from state_indices, int64
    offsets) and computes S @ q^ from the updated tile; the pool is never gathered or copied;
  * k-last layout: each row of the tile is contiguous along K, so the tile loads and stores
    are 16-byte vectors and both matrix-vector products reduce along the contiguous axis;
  * the gates (softplus, exp, sigmoid) and the L2 norms of q and k are computed in the kernel
    from the raw inputs (one rsqrt per vector), so nothing runs before the kernel;
  * grouped value heads: value head h reads q / k head h // (HV // HQK); q and k are never
    repeated in memory;
  * num_warps = BV * K / 1024 (1 to 8): 32 state elements per thread at BV = 32.
The state tile is loaded before the small vectors and the gate math so its latency overlaps
theirs. Dtypes come from the pointers (bf16 on the GPU, fp16 under TRITON_INTERPRET=1).
"""
import os

import torch
import triton
import triton.language as tl

_INTERPRET = os.environ.get("TRITON_INTERPRET", "0") == "1"

MAX_BV = 64 if _INTERPRET else 32   # state rows per program for large batches (the CPU
                                    # interpreter pays per program: fewer, larger tiles there)
MIN_BV = 4
PROGS_PER_SM = 4         # shrink BV until the grid has this many programs per SM


@triton.jit
def _gates_norms(Q, Kt, A_LOG, Ag, DT_BIAS, qk_off, mask_k, a_off, i_hv, scale):
    """q^ * scale, k^ (L2-normalised, fp32) and the decay factor exp(g) of one (n, h)."""
    q = tl.load(Q + qk_off, mask=mask_k, other=0.0).to(tl.float32)
    k = tl.load(Kt + qk_off, mask=mask_k, other=0.0).to(tl.float32)
    x = tl.load(Ag + a_off).to(tl.float32) + tl.load(DT_BIAS + i_hv).to(tl.float32)
    softplus = tl.where(x > 20.0, x, tl.log(1.0 + tl.exp(tl.minimum(x, 20.0))))
    decay = tl.exp(-tl.exp(tl.load(A_LOG + i_hv).to(tl.float32)) * softplus)
    q = q * (tl.math.rsqrt(tl.sum(q * q, axis=0) + 1e-6) * scale)
    k = k * tl.math.rsqrt(tl.sum(k * k, axis=0) + 1e-6)
    return q, k, decay


@triton.jit
def _gdn_products_kernel(
    Q, Kt, S, IDX, A_LOG, Ag, DT_BIAS, U,
    scale, n_vblk,
    stride_qn, stride_qh, stride_an, stride_ss, stride_sh, stride_sv,
    K: tl.constexpr, V: tl.constexpr, HV: tl.constexpr, GROUP: tl.constexpr,
    BK: tl.constexpr, BV: tl.constexpr,
):
    """Pass 1, program (n * HV + h) * n_vblk + j: u[n, h, rows] = exp(g) * (S @ k^) over rows
    [j * BV, j * BV + BV) of the state of sequence n, value head h."""
    pid = tl.program_id(0)
    i_nh = pid // n_vblk
    i_v = pid % n_vblk
    i_n = i_nh // HV
    i_hv = i_nh % HV
    i_h = i_hv // GROUP                         # grouped value heads share a q/k head
    offs_k = tl.max_contiguous(tl.multiple_of(tl.arange(0, BK), BK), BK)
    offs_v = i_v * BV + tl.arange(0, BV)
    mask_k = offs_k < K
    mask_v = offs_v < V
    slot = tl.load(IDX + i_n).to(tl.int64)
    s_ptr = (S + slot * stride_ss + i_hv * stride_sh
             + offs_v[:, None].to(tl.int64) * stride_sv + offs_k[None, :])
    mask_s = mask_v[:, None] & mask_k[None, :]
    h = tl.load(s_ptr, mask=mask_s, other=0.0)
    q, k, decay = _gates_norms(Q, Kt, A_LOG, Ag, DT_BIAS, i_n * stride_qn + i_h * stride_qh + offs_k,
                               mask_k, i_n * stride_an + i_hv, i_hv, scale)
    u = tl.sum(h * k[None, :], axis=1) * decay
    tl.store(U + (i_n * HV + i_hv) * V + offs_v, u, mask=mask_v)


@triton.jit
def _gdn_decode_kernel(
    Q, Kt, Vt, S, IDX, A_LOG, Ag, DT_BIAS, Bg, U, O,
    scale, n_vblk,
    stride_qn, stride_qh,            # q and k share strides ([B, 1, HQK, K] contiguous)
    stride_vn, stride_vh,            # v and o share strides ([B, 1, HV, V] contiguous)
    stride_an,                       # a and b share strides ([B, 1, HV])
    stride_ss, stride_sh, stride_sv, # the state pool [NS, HV, V, K], K contiguous
    K: tl.constexpr, V: tl.constexpr, HV: tl.constexpr, GROUP: tl.constexpr,
    BK: tl.constexpr, BV: tl.constexpr,
):
    """Pass 2, program (n * HV + h) * n_vblk + j: rows [j * BV, j * BV + BV) of the state of
    sequence n, value head h, read again: decay, delta-rule update with pass 1's u, output."""
    pid = tl.program_id(0)
    i_nh = pid // n_vblk
    i_v = pid % n_vblk
    i_n = i_nh // HV
    i_hv = i_nh % HV
    i_h = i_hv // GROUP                         # grouped value heads share a q/k head
    offs_k = tl.max_contiguous(tl.multiple_of(tl.arange(0, BK), BK), BK)
    offs_v = i_v * BV + tl.arange(0, BV)
    mask_k = offs_k < K
    mask_v = offs_v < V
    slot = tl.load(IDX + i_n).to(tl.int64)
    s_ptr = (S + slot * stride_ss + i_hv * stride_sh
             + offs_v[:, None].to(tl.int64) * stride_sv + offs_k[None, :])
    mask_s = mask_v[:, None] & mask_k[None, :]
    h = tl.load(s_ptr, mask=mask_s, other=0.0)
    q, k, decay = _gates_norms(Q, Kt, A_LOG, Ag, DT_BIAS, i_n * stride_qn + i_h * stride_qh + offs_k,
                               mask_k, i_n * stride_an + i_hv, i_hv, scale)
    v_off = i_n * stride_vn + i_hv * stride_vh + offs_v
    v = tl.load(Vt + v_off, mask=mask_v, other=0.0).to(tl.float32)
    u = tl.load(U + (i_n * HV + i_hv) * V + offs_v, mask=mask_v, other=0.0)
    beta = tl.sigmoid(tl.load(Bg + i_n * stride_an + i_hv).to(tl.float32))
    vn = beta * (v - u)
    h = h * decay + vn[:, None] * k[None, :]
    o = tl.sum(h * q[None, :], axis=1)                  # scale already in q

    tl.store(s_ptr, h, mask=mask_s)                     # in place, the same slot
    tl.store(O + v_off, o.to(O.dtype.element_ty), mask=mask_v)


_n_sm = {}


def _sm_count(t):
    if _INTERPRET or not t.is_cuda:
        return 4
    dev = t.device.index
    n = _n_sm.get(dev)
    if n is None:
        n = _n_sm[dev] = torch.cuda.get_device_properties(t.device).multi_processor_count
    return n


def run(q, k, v, state, state_indices, A_log, a, dt_bias, b, scale):
    B, _, HQK, K = q.shape
    HV, V = v.shape[2], v.shape[3]
    assert HV % HQK == 0, "HV must be a multiple of HQK"
    assert state.stride(-1) == 1 and state.shape[1:] == (HV, V, K)
    q, k, v, a, b = (t.contiguous() for t in (q, k, v, a, b))
    o = torch.empty_like(v)
    if B == 0:
        return o
    BK = triton.next_power_of_2(K)
    bv = min(MAX_BV, triton.next_power_of_2(V))
    while bv > MIN_BV and B * HV * triton.cdiv(V, bv) < PROGS_PER_SM * _sm_count(q):
        bv //= 2
    n_vblk = triton.cdiv(V, bv)
    num_warps = max(1, min(8, bv * BK // 1024))
    grid = (B * HV * n_vblk,)
    u = torch.empty((B, HV, V), dtype=torch.float32, device=q.device)
    _gdn_products_kernel[grid](
        q, k, state, state_indices, A_log, a, dt_bias, u,
        float(scale), n_vblk,
        q.stride(0), q.stride(2), a.stride(0),
        state.stride(0), state.stride(1), state.stride(2),
        K=K, V=V, HV=HV, GROUP=HV // HQK, BK=BK, BV=bv, num_warps=num_warps,
    )
    _gdn_decode_kernel[grid](
        q, k, v, state, state_indices, A_log, a, dt_bias, b, u, o,
        float(scale), n_vblk,
        q.stride(0), q.stride(2), v.stride(0), v.stride(2), a.stride(0),
        state.stride(0), state.stride(1), state.stride(2),
        K=K, V=V, HV=HV, GROUP=HV // HQK, BK=BK, BV=bv, num_warps=num_warps,
    )
    return o
