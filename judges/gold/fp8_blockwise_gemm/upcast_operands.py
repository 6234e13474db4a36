"""Expert FP8 block-scaled GEMM with the fp8 tensor-core path ablated (gold-set ablation
`upcast_operands`).

Identical to tasks/fp8_blockwise_gemm/expert.py as of a0298f0 (before its Gluon path) except
that the e4m3 tiles, once loaded (still through TMA descriptors on the large-M path), are
converted to C's 16-bit dtype before tl.dot, so the tensor cores run a bf16 MMA at half the fp8
rate. The conversion is exact (every e4m3 value is a bf16/fp16 value) and the scales are still
applied to each group's fresh fp32 partial, so the result is unchanged.

Expert FP8 GEMM with DeepSeek-style block-wise scales.

    C[m, n] = sum_k (A[m, k] * As[m, k // 128]) * (B[n, k] * Bs[n // 128, k // 128])

A [M, K] and B [N, K] are e4m3; As [M, K/128] and Bs [ceil(N/128), K/128] are fp32; C [M, N] is
written in place in its own dtype (bf16 on the GPU).

Design:

* The K loop steps exactly one scale group (BK == 128) per iteration. Each iteration feeds the
  e4m3 tiles, converted to C's 16-bit dtype, to the tensor cores (a bf16 `tl.dot`), takes the
  128-wide partial product as a fresh fp32 result, multiplies it by the row scales of A and the
  block scale of B and adds it into a separate fp32 accumulator. This is DeepGEMM's
  "promotion": the tensor core's limited-precision fp8 accumulation only ever spans 128
  products, the running sum over K lives in full fp32 registers.
* When the N tile fits inside one 128-row scale block (BN <= 128), B's scale is one scalar per
  (tile, K group); wider tiles gather it per column. The A scales are read from an M-major copy
  of As ([K/128, M], made once per call on the large-M path) so each iteration's BM scales are
  one contiguous, coalesced load.
* M > SMALL_M_MAX (prefill, compute-bound): a persistent kernel. One or two programs per SM
  walk the output tiles with a stride of the grid size in a grouped (GROUP_SIZE_M) order so co-resident tiles share
  A and B panels in L2. On sm_90 the e4m3 tiles arrive through device-side TMA tensor
  descriptors (zero-filled out of bounds), 128x128x128 tiles with 8 warps (two consumer
  warpgroups) and 3-4 stages, or 64/128-wide single-warpgroup tiles at two CTAs per SM.
* M <= SMALL_M_MAX (decode-like, few output tiles): small BM (16-64) and split-K so a few
  hundred CTAs stream disjoint K slices of B. Each split scales its own partials per K group,
  writes an fp32 partial tile to a workspace and bumps a per-tile counter; the last arriver sums
  the partials in a fixed order (deterministic), writes C and resets the counter. One launch.

Both kernels are autotuned on (M, N, K). Under TRITON_INTERPRET=1 each has one small config
and dtypes come from the pointers (the CPU run writes float16).
"""
import os

import torch
import triton
import triton.language as tl

_INTERPRET = os.environ.get("TRITON_INTERPRET", "0") == "1"

GROUP_K = 128        # quantization group along K (both operands) and along N (weights)
SMALL_M_MAX = 64


# --------------------------------------------------------------------------------------------
# Large-M path: persistent, grouped raster, TMA on sm_90
# --------------------------------------------------------------------------------------------
@triton.jit
def _grouped_tile(tile_id, num_pid_m, num_pid_n, GROUP_SIZE_M: tl.constexpr):
    # Groups of GROUP_SIZE_M tile-rows; within a group consecutive ids walk down M, so the
    # programs running together reuse one B panel and a group's A panels from L2.
    width = GROUP_SIZE_M * num_pid_n
    first_m = (tile_id // width) * GROUP_SIZE_M
    rows = tl.minimum(num_pid_m - first_m, GROUP_SIZE_M)
    inner = tile_id % width
    return first_m + inner % rows, inner // rows


@triton.jit
def _fp8_gemm_persistent_kernel(
    a_ptr, ast_ptr, b_ptr, bs_ptr, c_ptr,
    M, N, K,
    stride_bs, stride_cm,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
    GROUP_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr,
    CTAS_PER_SM: tl.constexpr, USE_TMA: tl.constexpr,
):
    """C tiles of sum_g (A_g . B_g^T) * As[:, g] * Bs[n // 128, g]; As is given M-major
    (ast_ptr: [K/128, M] contiguous)."""
    tl.static_assert(BK == GROUP_K, "one K step per scale group")
    out_ty = c_ptr.dtype.element_ty
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    num_tiles = num_pid_m * num_pid_n
    k_steps = K // BK

    if USE_TMA:
        a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
        b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BN, BK])
    rk = tl.arange(0, BK)

    # persistent: the grid is CTAS_PER_SM x #SMs programs (host side), each strides over tiles
    for tile in tl.range(pid, num_tiles, tl.num_programs(0), flatten=True):
        pid_m, pid_n = _grouped_tile(tile, num_pid_m, num_pid_n, GROUP_SIZE_M)
        off_m = pid_m * BM
        off_n = pid_n * BN
        rm = off_m + tl.arange(0, BM)
        rn = off_n + tl.arange(0, BN)
        m_ok = rm < M
        n_ok = rn < N
        as_ptrs = ast_ptr + rm                       # + g * M: contiguous along M
        if BN <= GROUP_K:
            bs_row = bs_ptr + (off_n // GROUP_K) * stride_bs   # the tile's single scale block
        else:
            bs_ptrs = bs_ptr + (tl.where(n_ok, rn, 0) // GROUP_K) * stride_bs
        if not USE_TMA:
            rm_c = tl.max_contiguous(tl.multiple_of(tl.where(m_ok, rm, 0), BM), BM)
            rn_c = tl.max_contiguous(tl.multiple_of(tl.where(n_ok, rn, 0), BN), BN)
            a_ptrs = a_ptr + rm_c[:, None] * K + rk[None, :]
            b_ptrs = b_ptr + rn_c[:, None] * K + rk[None, :]

        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for g in range(k_steps):
            if USE_TMA:
                a = a_desc.load([off_m, g * BK])
                b = b_desc.load([off_n, g * BK])
            else:
                a = tl.load(a_ptrs + g * BK)
                b = tl.load(b_ptrs + g * BK)
            a_s = tl.load(as_ptrs + g * M, mask=m_ok, other=0.0)
            a16 = a.to(out_ty)        # e4m3 -> bf16 is exact; the MMA runs in bf16
            b16 = b.to(out_ty)
            # fresh fp32 partial of one 128-wide group, promoted into the fp32 accumulator
            part = tl.dot(a16, b16.T)
            if BN <= GROUP_K:
                b_s = tl.load(bs_row + g)
                acc += part * (a_s * b_s)[:, None]
            else:
                b_s = tl.load(bs_ptrs + g, mask=n_ok, other=0.0)
                acc += part * a_s[:, None] * b_s[None, :]

        c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :]
        tl.store(c_ptrs, acc.to(out_ty), mask=m_ok[:, None] & n_ok[None, :])


def _persistent_configs():
    if _INTERPRET:
        return [triton.Config({"BM": 32, "BN": 64, "GROUP_SIZE_M": 2, "CTAS_PER_SM": 1},
                              num_warps=4, num_stages=2)]

    def cfg(bm, bn, stages, warps, group=8, per_sm=1):
        return triton.Config({"BM": bm, "BN": bn, "GROUP_SIZE_M": group, "CTAS_PER_SM": per_sm},
                             num_warps=warps, num_stages=stages)

    # BK is fixed at 128 (= the scale group). 128x128 with two consumer warpgroups keeps the
    # fp32 accumulator and the fresh partial at 64 + 64 registers per thread (~180 with
    # addressing; ptxas reports no spills); wider tiles would need 256 and spill. The 64- and
    # 128-wide single-warpgroup tiles fit two CTAs per SM (< 100 KB shared memory, < 200
    # registers), so one CTA's fp32 promotion overlaps the other's wgmma.
    return [
        cfg(128, 128, 3, 8),
        cfg(128, 128, 4, 8),
        cfg(128, 128, 4, 8, group=16),
        cfg(128, 64, 4, 4, per_sm=2),
        cfg(64, 128, 3, 4, per_sm=2),
        cfg(64, 128, 5, 4),
    ]


_fp8_gemm_persistent = triton.autotune(
    configs=_persistent_configs(),
    key=["M", "N", "K", "USE_TMA"],
)(_fp8_gemm_persistent_kernel)


# --------------------------------------------------------------------------------------------
# Small-M path: split-K, last arriver reduces
# --------------------------------------------------------------------------------------------
@triton.jit
def _fp8_gemm_splitk_kernel(
    a_ptr, as_ptr, b_ptr, bs_ptr, c_ptr, ws_ptr, count_ptr,
    M, N, K,
    stride_as, stride_bs, stride_cm,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
    GROUP_K: tl.constexpr, SPLIT_K: tl.constexpr,
):
    """One (M tile, N tile, K slice) of the block-scaled product; the SPLIT_K slices of a tile
    are summed by the last program to finish."""
    tl.static_assert(BK == GROUP_K, "one K step per scale group")
    out_ty = c_ptr.dtype.element_ty
    pid_n = tl.program_id(0)
    pid_k = tl.program_id(1)
    pid_m = tl.program_id(2)
    num_pid_n = tl.cdiv(N, BN)

    groups = K // BK
    per_split = tl.cdiv(groups, SPLIT_K)
    g0 = pid_k * per_split
    g1 = tl.minimum(g0 + per_split, groups)

    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    m_ok = rm < M
    n_ok = rn < N
    rm_c = tl.where(m_ok, rm, 0)
    rn_c = tl.max_contiguous(tl.multiple_of(tl.where(n_ok, rn, 0), BN), BN)
    a_ptrs = a_ptr + rm_c[:, None] * K + rk[None, :]
    b_ptrs = b_ptr + rn_c[:, None] * K + rk[None, :]
    as_ptrs = as_ptr + rm_c * stride_as
    if BN <= GROUP_K:
        bs_row = bs_ptr + (pid_n * BN // GROUP_K) * stride_bs
    else:
        bs_ptrs = bs_ptr + (rn_c // GROUP_K) * stride_bs

    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for g in range(g0, g1):
        a = tl.load(a_ptrs + g * BK)
        b = tl.load(b_ptrs + g * BK, eviction_policy="evict_first")   # each weight byte once
        a_s = tl.load(as_ptrs + g)
        a16 = a.to(out_ty)
        b16 = b.to(out_ty)
        part = tl.dot(a16, b16.T)
        if BN <= GROUP_K:
            b_s = tl.load(bs_row + g)
            acc += part * (a_s * b_s)[:, None]
        else:
            b_s = tl.load(bs_ptrs + g)
            acc += part * a_s[:, None] * b_s[None, :]

    c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :]
    c_mask = m_ok[:, None] & n_ok[None, :]
    if SPLIT_K == 1:
        tl.store(c_ptrs, acc.to(out_ty), mask=c_mask)
    else:
        tile = pid_m * num_pid_n + pid_n
        tile_ws = ws_ptr + tile.to(tl.int64) * (SPLIT_K * BM * BN)
        blk = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
        tl.store(tile_ws + pid_k * (BM * BN) + blk, acc)
        tl.debug_barrier()   # every thread's partial is written before the release below
        arrived = tl.atomic_add(count_ptr + tile, 1, sem="acq_rel", scope="gpu")
        if arrived == SPLIT_K - 1:
            total = tl.zeros((BM, BN), dtype=tl.float32)
            for s in tl.static_range(SPLIT_K):
                total += tl.load(tile_ws + s * (BM * BN) + blk, cache_modifier=".cg")
            tl.store(c_ptrs, total.to(out_ty), mask=c_mask)
            tl.atomic_xchg(count_ptr + tile, 0, sem="relaxed", scope="gpu")


def _splitk_configs():
    if _INTERPRET:
        return [triton.Config({"BM": 16, "BN": 64, "SPLIT_K": 2}, num_warps=4, num_stages=2)]

    def cfg(bm, bn, split, stages, warps=4):
        return triton.Config({"BM": bm, "BN": bn, "SPLIT_K": split}, num_warps=warps, num_stages=stages)

    out = []
    for bm in (16, 32, 64):
        out += [
            cfg(bm, 64, 1, 4), cfg(bm, 64, 2, 4), cfg(bm, 64, 4, 4), cfg(bm, 64, 8, 3),
            cfg(bm, 128, 1, 4), cfg(bm, 128, 2, 4), cfg(bm, 128, 4, 4), cfg(bm, 128, 8, 3),
            cfg(bm, 128, 4, 5), cfg(bm, 128, 8, 4, warps=8), cfg(bm, 64, 16, 3),
        ]
    return out


def _prune_splitk(configs, named_args, **kwargs):
    # BM = the smallest power of two >= M (16..64): no MMA rows wasted beyond that.
    want = max(16, min(SMALL_M_MAX, triton.next_power_of_2(named_args["M"])))
    kept = [c for c in configs if c.kwargs["BM"] == want]
    return kept or configs


_fp8_gemm_splitk = triton.autotune(
    configs=_splitk_configs(),
    key=["M", "N", "K"],
    prune_configs_by=None if _INTERPRET else {"early_config_prune": _prune_splitk},
)(_fp8_gemm_splitk_kernel)

_SK = _splitk_configs()
_SK_MAX_SPLIT = max(c.kwargs["SPLIT_K"] for c in _SK)
_SK_MAX_BM = max(c.kwargs["BM"] for c in _SK)
_SK_MAX_BN = max(c.kwargs["BN"] for c in _SK)
_SK_MIN_BM = min(c.kwargs["BM"] for c in _SK)
_SK_MIN_BN = min(c.kwargs["BN"] for c in _SK)


# --------------------------------------------------------------------------------------------
# Host side
# --------------------------------------------------------------------------------------------
_NUM_SMS = {}
_COUNTERS = {}


def _num_sms(device):
    if device.type != "cuda":
        return 4  # interpreter: a few "SMs", so programs loop over several tiles
    idx = device.index if device.index is not None else torch.cuda.current_device()
    if idx not in _NUM_SMS:
        _NUM_SMS[idx] = torch.cuda.get_device_properties(idx).multi_processor_count
    return _NUM_SMS[idx]


def _counters(device, n):
    buf = _COUNTERS.get(device)
    if buf is None or buf.numel() < n:
        buf = torch.zeros(max(n, 4096), dtype=torch.int32, device=device)
        _COUNTERS[device] = buf
    return buf


def _set_allocator(device):
    def alloc(size, alignment, stream):
        return torch.empty(size, dtype=torch.int8, device=device)

    triton.set_allocator(alloc)


def _tma_ok(A, B):
    if A.device.type == "cuda" and torch.cuda.get_device_capability(A.device)[0] < 9:
        return False
    return A.data_ptr() % 16 == 0 and B.data_ptr() % 16 == 0 and A.shape[1] % 16 == 0


def run(A, As, B, Bs, C):
    M, K = A.shape
    N = B.shape[0]
    assert K % GROUP_K == 0 and B.shape[1] == K and C.shape == (M, N)
    assert As.shape == (M, K // GROUP_K) and Bs.shape == (triton.cdiv(N, GROUP_K), K // GROUP_K)
    A, B, As, Bs = A.contiguous(), B.contiguous(), As.contiguous(), Bs.contiguous()
    if M == 0 or N == 0:
        return None
    if K == 0:
        C.zero_()
        return None
    out = C if C.is_contiguous() else torch.empty_like(C, memory_format=torch.contiguous_format)

    if M <= SMALL_M_MAX:
        ws = torch.empty(_SK_MAX_SPLIT * (M + _SK_MAX_BM) * (N + _SK_MAX_BN),
                         dtype=torch.float32, device=A.device)
        counters = _counters(A.device, triton.cdiv(M, _SK_MIN_BM) * triton.cdiv(N, _SK_MIN_BN))
        grid = lambda meta: (triton.cdiv(N, meta["BN"]), meta["SPLIT_K"], triton.cdiv(M, meta["BM"]))
        _fp8_gemm_splitk[grid](A, As, B, Bs, out, ws, counters, M, N, K,
                               As.stride(0), Bs.stride(0), out.stride(0), BK=GROUP_K, GROUP_K=GROUP_K)
    else:
        ast = As.t().contiguous()          # M-major scales: [K/128, M]
        use_tma = _tma_ok(A, B)
        if use_tma:
            _set_allocator(A.device)
        num_sms = _num_sms(A.device)
        grid = lambda meta: (min(meta["CTAS_PER_SM"] * num_sms,
                                 triton.cdiv(M, meta["BM"]) * triton.cdiv(N, meta["BN"])),)
        _fp8_gemm_persistent[grid](A, ast, B, Bs, out, M, N, K, Bs.stride(0), out.stride(0),
                                   BK=GROUP_K, GROUP_K=GROUP_K, USE_TMA=use_tma)
    if out is not C:
        C.copy_(out)
    return None
