"""Expert bf16 GEMM for a dense linear layer, C = A @ B^T, with TMA ablated.

Gold-set ablation `no_tma`: identical to tasks/bf16_gemm/expert.py except that the persistent
kernel always moves its tiles with masked pointer loads and a masked pointer store: no tensor
descriptors, no descriptor scratch allocator, no device-capability/alignment check selecting a
Hopper path. What existed only for that path goes with it: the two-halves C-tile store through
a descriptor and the warp-specialized tile-loop config (the expert kept it only with TMA loads),
along with the config that differed only in the C-store layout.

    C[m, n] = sum_k A[m, k] * B[n, k]     A: [M, K], B: [N, K], C: [M, N], one dtype (bf16)

Products are accumulated in fp32 and rounded to C's dtype once, at the end of each tile.

Two kernels, chosen by M:

* M > SKINNY_M_MAX (prefill / training shapes, compute-bound): a persistent kernel. NUM_SMS
  programs walk the output tiles with a stride of NUM_SMS in a grouped (GROUP_SIZE_M) order so
  that the tiles in flight share A row-panels and B column-panels in L2. The tile loop is a
  flattened `tl.range`, so the software pipeliner overlaps the next tile's loads with the
  current tile's epilogue. On every GPU the tiles are read with masked pointer loads
  (out-of-range rows are clamped to row 0 and masked at the store) into tl.dot, with
  128x256x64 / 8-warp tiles and 3-4 stages among the configs.

* M <= SKINNY_M_MAX (decode, bandwidth-bound: the kernel streams B once): split-K with small
  BM. The grid is (N tiles) x SPLIT_K x (M tiles), so a few hundred CTAs stream disjoint
  slices of B. Each CTA writes its fp32 partial tile to a workspace and bumps a per-tile
  arrival counter; the last CTA to arrive sums the SPLIT_K partials in a fixed order
  (deterministic), writes C and resets the counter to zero for the next call. One launch.

Both kernels are autotuned on (M, N, K) on the GPU. Under TRITON_INTERPRET=1 each has a single
small config (the interpreter cannot benchmark configs) and dtypes come from the pointers, so
the CPU smoke run works in float16.
"""
import os

import torch
import triton
import triton.language as tl

_INTERPRET = os.environ.get("TRITON_INTERPRET", "0") == "1"

SKINNY_M_MAX = 64


# --------------------------------------------------------------------------------------------
# Large-M path: persistent, grouped raster, pointer loads
# --------------------------------------------------------------------------------------------
@triton.jit
def _grouped_tile(tile_id, num_pid_m, num_pid_n, GROUP_SIZE_M: tl.constexpr):
    # Tiles are numbered group by group; a group is GROUP_SIZE_M M-tiles wide and spans every
    # N-tile. Inside a group we walk down M first, so neighbouring tile ids share a B panel and
    # a group's worth of A panels stays hot in L2.
    tiles_per_group = GROUP_SIZE_M * num_pid_n
    group = tile_id // tiles_per_group
    m_base = group * GROUP_SIZE_M
    m_span = tl.minimum(num_pid_m - m_base, GROUP_SIZE_M)  # the last group may be short
    local = tile_id % tiles_per_group
    return m_base + local % m_span, local // m_span


@triton.jit
def _gemm_persistent_kernel(
    a_ptr, b_ptr, c_ptr,
    M, N, K,
    stride_am, stride_bn, stride_cm,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr,
    NUM_SMS: tl.constexpr,
):
    out_ty = c_ptr.dtype.element_ty
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    num_tiles = num_pid_m * num_pid_n
    k_steps = tl.cdiv(K, BK)

    rk = tl.arange(0, BK)

    # The epilogue recomputes its tile coordinates from its own counter instead of reusing the
    # main loop's, so that after flattening the pipeliner does not have to keep one value alive
    # from the prologue of tile t+1 to the epilogue of tile t.
    epi_tile = pid - NUM_SMS
    for tile in tl.range(pid, num_tiles, NUM_SMS, flatten=True):
        pid_m, pid_n = _grouped_tile(tile, num_pid_m, num_pid_n, GROUP_SIZE_M)
        off_m = pid_m * BM
        off_n = pid_n * BN
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        # Clamp out-of-range rows to row 0 (their results are masked at the store), so the
        # loads only need a K mask.
        rm = off_m + tl.arange(0, BM)
        rn = off_n + tl.arange(0, BN)
        rm = tl.max_contiguous(tl.multiple_of(tl.where(rm < M, rm, 0), BM), BM)
        rn = tl.max_contiguous(tl.multiple_of(tl.where(rn < N, rn, 0), BN), BN)
        for ks in range(k_steps):
            kk = ks * BK + rk
            a = tl.load(a_ptr + rm[:, None] * stride_am + kk[None, :],
                        mask=kk[None, :] < K, other=0.0)
            b = tl.load(b_ptr + rn[:, None] * stride_bn + kk[None, :],
                        mask=kk[None, :] < K, other=0.0)
            acc = tl.dot(a, b.T, acc)

        epi_tile += NUM_SMS
        cm, cn = _grouped_tile(epi_tile, num_pid_m, num_pid_n, GROUP_SIZE_M)
        om = cm * BM + tl.arange(0, BM)
        on = cn * BN + tl.arange(0, BN)
        tl.store(c_ptr + om[:, None] * stride_cm + on[None, :], acc.to(out_ty),
                 mask=(om[:, None] < M) & (on[None, :] < N))


def _persistent_configs():
    if _INTERPRET:
        return [triton.Config({"BM": 32, "BN": 32, "BK": 64, "GROUP_SIZE_M": 2},
                              num_warps=4, num_stages=2)]

    def cfg(bm, bn, bk, stages, warps=8, group=8):
        return triton.Config({"BM": bm, "BN": bn, "BK": bk, "GROUP_SIZE_M": group},
                             num_warps=warps, num_stages=stages)

    configs = [
        cfg(128, 256, 64, 3),
        cfg(128, 256, 64, 4),
        cfg(256, 128, 64, 3),
        cfg(256, 128, 64, 4),
        cfg(128, 128, 64, 4),
        cfg(128, 128, 64, 5, warps=4),
        cfg(128, 256, 64, 3, group=16),
    ]
    return configs


_gemm_persistent = triton.autotune(
    configs=_persistent_configs(),
    key=["M", "N", "K"],
)(_gemm_persistent_kernel)


# --------------------------------------------------------------------------------------------
# Small-M path: split-K with a last-arriver reduction
# --------------------------------------------------------------------------------------------
@triton.jit
def _gemm_splitk_kernel(
    a_ptr, b_ptr, c_ptr, ws_ptr, count_ptr,
    M, N, K,
    stride_am, stride_bn, stride_cm,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
    SPLIT_K: tl.constexpr,
):
    out_ty = c_ptr.dtype.element_ty
    pid_n = tl.program_id(0)
    pid_k = tl.program_id(1)
    pid_m = tl.program_id(2)
    num_pid_n = tl.cdiv(N, BN)

    # This CTA's share of the K steps: a contiguous run [ks0, ks1) (possibly empty).
    k_steps = tl.cdiv(K, BK)
    per_split = tl.cdiv(k_steps, SPLIT_K)
    ks0 = pid_k * per_split
    ks1 = tl.minimum(ks0 + per_split, k_steps)

    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    rm_c = tl.where(rm < M, rm, 0)
    rn_c = tl.max_contiguous(tl.multiple_of(tl.where(rn < N, rn, 0), BN), BN)
    a_ptrs = a_ptr + rm_c[:, None] * stride_am + (ks0 * BK + rk)[None, :]
    b_ptrs = b_ptr + rn_c[:, None] * stride_bn + (ks0 * BK + rk)[None, :]

    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for ks in range(ks0, ks1):
        kmask = (ks * BK + rk)[None, :] < K
        a = tl.load(a_ptrs, mask=kmask, other=0.0)
        b = tl.load(b_ptrs, mask=kmask, other=0.0, eviction_policy="evict_first")  # streamed once
        acc = tl.dot(a, b.T, acc)
        a_ptrs += BK
        b_ptrs += BK

    # Workspace layout [tiles, SPLIT_K, BM, BN] fp32: each partial is one contiguous block.
    tile = pid_m * num_pid_n + pid_n
    tile_ws = ws_ptr + tile.to(tl.int64) * (SPLIT_K * BM * BN)
    blk = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    tl.store(tile_ws + pid_k * (BM * BN) + blk, acc)

    # Publish the partial: every thread's store is ordered before the barrier, and the
    # acq_rel atomic releases them at GPU scope (and acquires the other CTAs' partials).
    tl.debug_barrier()
    arrived = tl.atomic_add(count_ptr + tile, 1, sem="acq_rel", scope="gpu")
    if arrived == SPLIT_K - 1:
        total = tl.zeros((BM, BN), dtype=tl.float32)
        for s in tl.static_range(SPLIT_K):  # fixed order: bitwise reproducible
            total += tl.load(tile_ws + s * (BM * BN) + blk, cache_modifier=".cg")
        tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], total.to(out_ty),
                 mask=(rm[:, None] < M) & (rn[None, :] < N))
        tl.atomic_xchg(count_ptr + tile, 0, sem="relaxed", scope="gpu")  # ready for next call


def _splitk_configs():
    if _INTERPRET:
        return [triton.Config({"BM": 16, "BN": 32, "BK": 64, "SPLIT_K": 2},
                              num_warps=4, num_stages=2)]

    def cfg(bm, bn, bk, split, stages, warps=4):
        return triton.Config({"BM": bm, "BN": bn, "BK": bk, "SPLIT_K": split},
                             num_warps=warps, num_stages=stages)

    # Aim for one wave: (N / BN) * SPLIT_K close to 2 CTAs x 132 SMs (or 1 x 132 for the
    # deep-pipeline configs), each CTA streaming a contiguous K slice of BN rows of B.
    out = []
    for bm in (16, 32, 64):
        out += [
            cfg(bm, 64, 128, 4, 4),
            cfg(bm, 64, 128, 4, 4, warps=8),
            cfg(bm, 64, 128, 8, 4),
            cfg(bm, 32, 256, 4, 4),
            cfg(bm, 128, 128, 8, 3),
            cfg(bm, 128, 128, 4, 5),
            cfg(bm, 32, 128, 2, 6),
            cfg(bm, 64, 256, 4, 3),
            cfg(bm, 64, 64, 4, 8),
        ]
    return out


def _prune_splitk(configs, named_args, **kwargs):
    # Keep the configs whose BM is the smallest power of two >= M (16..64): the small-M config
    # space is chosen by shape first, then timed.
    m = named_args["M"]
    want = max(16, min(SKINNY_M_MAX, triton.next_power_of_2(m)))
    kept = [c for c in configs if c.kwargs["BM"] == want]
    return kept or configs


_gemm_splitk = triton.autotune(
    configs=_splitk_configs(),
    key=["M", "N", "K"],
    prune_configs_by=None if _INTERPRET else {"early_config_prune": _prune_splitk},
)(_gemm_splitk_kernel)


_SK_MAX_SPLIT = max(c.kwargs["SPLIT_K"] for c in _splitk_configs())
_SK_MAX_BM = max(c.kwargs["BM"] for c in _splitk_configs())
_SK_MAX_BN = max(c.kwargs["BN"] for c in _splitk_configs())
_SK_MIN_BM = min(c.kwargs["BM"] for c in _splitk_configs())
_SK_MIN_BN = min(c.kwargs["BN"] for c in _splitk_configs())


# --------------------------------------------------------------------------------------------
# Host side
# --------------------------------------------------------------------------------------------
_NUM_SMS = {}
_COUNTERS = {}


def _num_sms(device):
    if device.type != "cuda":
        return 4  # interpreter: a few "SMs" so that each program loops over several tiles
    idx = device.index if device.index is not None else torch.cuda.current_device()
    if idx not in _NUM_SMS:
        _NUM_SMS[idx] = torch.cuda.get_device_properties(idx).multi_processor_count
    return _NUM_SMS[idx]


def _counters(device, n):
    # Zero-initialised once; the kernel leaves every counter it touched back at zero.
    buf = _COUNTERS.get(device)
    if buf is None or buf.numel() < n:
        buf = torch.zeros(max(n, 4096), dtype=torch.int32, device=device)
        _COUNTERS[device] = buf
    return buf


def run(A, B):
    assert A.dim() == 2 and B.dim() == 2 and A.shape[1] == B.shape[1]
    assert A.dtype == B.dtype
    A = A.contiguous()
    B = B.contiguous()
    M, K = A.shape
    N = B.shape[0]
    C = torch.empty((M, N), dtype=A.dtype, device=A.device)
    if M == 0 or N == 0:
        return C
    if K == 0:
        return C.zero_()

    if M <= SKINNY_M_MAX:
        # Workspace and counters sized for any config: (M + BM - 1) x (N + BN - 1) x SPLIT_K.
        ws = torch.empty(_SK_MAX_SPLIT * (M + _SK_MAX_BM) * (N + _SK_MAX_BN),
                         dtype=torch.float32, device=A.device)
        counters = _counters(A.device, triton.cdiv(M, _SK_MIN_BM) * triton.cdiv(N, _SK_MIN_BN))
        grid = lambda meta: (triton.cdiv(N, meta["BN"]), meta["SPLIT_K"], triton.cdiv(M, meta["BM"]))
        _gemm_splitk[grid](A, B, C, ws, counters, M, N, K, A.stride(0), B.stride(0), C.stride(0))
        return C

    num_sms = _num_sms(A.device)
    grid = lambda meta: (min(num_sms, triton.cdiv(M, meta["BM"]) * triton.cdiv(N, meta["BN"])),)
    _gemm_persistent[grid](A, B, C, M, N, K, A.stride(0), B.stride(0), C.stride(0),
                           NUM_SMS=num_sms)
    return C
