"""Gated delta rule decode step (Qwen3-Next GDN), state pool updated in place: the expert
Triton implementation, in-kernel gates and q/k L2 norms ablated.

Gold-set ablation `gates_on_host`: identical to tasks/gdn_decode/expert.py except that run()
computes the gates (decay = exp(-exp(A_log) * softplus(a + dt_bias)), beta = sigmoid(b)) and
the L2-normalised q and k (fp32, q^ pre-multiplied by scale) with torch ops, and the kernel
loads those instead of the raw a, b, A_log, dt_bias, q and k.

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
  * the program's [BV, K] state tile is loaded once into registers, decayed, used for
    S @ k^, updated with the rank-1 term and used for S @ q^, then stored once, in place, at
    the same address (the slot from state_indices, int64 offsets): the state crosses HBM
    exactly twice and the pool is never gathered or copied;
  * k-last layout: each row of the tile is contiguous along K, so the tile loads and stores
    are 16-byte vectors and both matrix-vector products reduce along the contiguous axis;
  * the gates (decay factor exp(g), beta) and the L2-normalised q, k are computed by torch ops
    in run() and passed to the kernel as fp32 tensors;
  * grouped value heads: value head h reads q / k head h // (HV // HQK); q and k are never
    repeated in memory;
  * num_warps = BV * K / 1024 (1 to 8): 32 state elements per thread at BV = 32.
The state tile is loaded before the small vectors and the gate math so its latency overlaps
theirs. Dtypes come from the pointers (bf16 on the GPU, fp16 under TRITON_INTERPRET=1).
"""
import os

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

_INTERPRET = os.environ.get("TRITON_INTERPRET", "0") == "1"

MAX_BV = 64 if _INTERPRET else 32   # state rows per program for large batches (the CPU
                                    # interpreter pays per program: fewer, larger tiles there)
MIN_BV = 4
PROGS_PER_SM = 4         # shrink BV until the grid has this many programs per SM


@triton.jit
def _gdn_decode_kernel(
    Q, Kt, Vt, S, IDX, DECAY, BETA, O,
    n_vblk,
    stride_qn, stride_qh,            # q^ and k^ share strides ([B, HQK, K] fp32, contiguous)
    stride_vn, stride_vh,            # v and o share strides ([B, 1, HV, V] contiguous)
    stride_an,                       # decay and beta share strides ([B, HV] fp32)
    stride_ss, stride_sh, stride_sv, # the state pool [NS, HV, V, K], K contiguous
    K: tl.constexpr, V: tl.constexpr, HV: tl.constexpr, GROUP: tl.constexpr,
    BK: tl.constexpr, BV: tl.constexpr,
):
    """Program (n * HV + h) * n_vblk + j: rows [j * BV, j * BV + BV) of the state of sequence
    n, value head h: decay, delta-rule update and output, the tile read and written once."""
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

    # the state tile first: its latency overlaps the small loads and the gate math below
    slot = tl.load(IDX + i_n).to(tl.int64)
    s_ptr = (S + slot * stride_ss + i_hv * stride_sh
             + offs_v[:, None].to(tl.int64) * stride_sv + offs_k[None, :])
    mask_s = mask_v[:, None] & mask_k[None, :]      # constant along K: keeps 16-byte vectors
    h = tl.load(s_ptr, mask=mask_s, other=0.0)

    qk_off = i_n * stride_qn + i_h * stride_qh + offs_k
    q = tl.load(Q + qk_off, mask=mask_k, other=0.0).to(tl.float32)
    k = tl.load(Kt + qk_off, mask=mask_k, other=0.0).to(tl.float32)
    v_off = i_n * stride_vn + i_hv * stride_vh + offs_v
    v = tl.load(Vt + v_off, mask=mask_v, other=0.0).to(tl.float32)

    # the decay factor exp(g) and beta, precomputed by run()
    decay = tl.load(DECAY + i_n * stride_an + i_hv)
    beta = tl.load(BETA + i_n * stride_an + i_hv)

    # one pass over the tile: decay, S @ k^ (along contiguous K), rank-1 update, S @ q^
    h = h * decay
    u = tl.sum(h * k[None, :], axis=1)                  # [BV]
    vn = beta * (v - u)
    h = h + vn[:, None] * k[None, :]
    o = tl.sum(h * q[None, :], axis=1)                  # scale already in q^

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
    v = v.contiguous()
    o = torch.empty_like(v)
    if B == 0:
        return o
    # gates and L2 norms with torch ops (fp32), q^ pre-multiplied by the output scale
    qf, kf = q[:, 0].float(), k[:, 0].float()
    qn = (qf * (torch.rsqrt((qf * qf).sum(-1, keepdim=True) + 1e-6) * float(scale))).contiguous()
    kn = (kf * torch.rsqrt((kf * kf).sum(-1, keepdim=True) + 1e-6)).contiguous()
    decay = torch.exp(-torch.exp(A_log.float()) * F.softplus(a[:, 0].float() + dt_bias.float())).contiguous()
    beta = torch.sigmoid(b[:, 0].float()).contiguous()
    BK = triton.next_power_of_2(K)
    bv = min(MAX_BV, triton.next_power_of_2(V))
    while bv > MIN_BV and B * HV * triton.cdiv(V, bv) < PROGS_PER_SM * _sm_count(q):
        bv //= 2
    n_vblk = triton.cdiv(V, bv)
    num_warps = max(1, min(8, bv * BK // 1024))
    grid = (B * HV * n_vblk,)
    _gdn_decode_kernel[grid](
        qn, kn, v, state, state_indices, decay, beta, o,
        n_vblk,
        qn.stride(0), qn.stride(1), v.stride(0), v.stride(2), decay.stride(0),
        state.stride(0), state.stride(1), state.stride(2),
        K=K, V=V, HV=HV, GROUP=HV // HQK, BK=BK, BV=bv, num_warps=num_warps,
    )
    return o
