"""Expert bf16 GEMM for a dense linear layer, C = A @ B^T, with the small-M path ablated.

Gold-set ablation `no_splitk`: identical to tasks/bf16_gemm/expert.py except that the
dedicated decode-shape (small-M) kernel, which divided the K range across programs and reduced
their fp32 partials, is removed together with its configs, workspace and counters: every M,
including M = 16, goes through the persistent large-tile kernel.

    C[m, n] = sum_k A[m, k] * B[n, k]     A: [M, K], B: [N, K], C: [M, N], one dtype (bf16)

Products are accumulated in fp32 and rounded to C's dtype once, at the end of each tile.

One kernel for every M (prefill, training and decode shapes alike): a persistent kernel.
NUM_SMS programs walk the output tiles with a stride of NUM_SMS in a grouped (GROUP_SIZE_M)
order so that the tiles in flight share A row-panels and B column-panels in L2. The tile loop
is a flattened `tl.range`, so the software pipeliner overlaps the next tile's loads with the
current tile's epilogue. On sm_90+ the tiles move through device-side TMA tensor descriptors
(out-of-bounds reads are zero-filled, stores are clipped) feeding wgmma with 128x256x64 /
8-warp tiles and 3-4 stages (plus a warp-specialized variant of the tile loop); the C tile can
be stored in two halves to free shared memory for a deeper pipeline. Elsewhere (older GPUs,
unaligned strides) the same loop uses masked pointer loads. Each output tile is computed by
one program over the whole K range; a small M gets no special treatment.

The kernel is autotuned on (M, N, K) on the GPU. Under TRITON_INTERPRET=1 it has a single small
config (the interpreter cannot benchmark configs) and dtypes come from the pointers, so the CPU
smoke run works in float16.
"""
import os

import torch
import triton
import triton.language as tl

_INTERPRET = os.environ.get("TRITON_INTERPRET", "0") == "1"


# --------------------------------------------------------------------------------------------
# Persistent kernel, grouped raster, TMA descriptors on sm_90+
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
    EPI_HALVES: tl.constexpr,     # store the C tile as two BN/2 halves (TMA path)
    NUM_SMS: tl.constexpr,
    USE_TMA: tl.constexpr,
    WARP_SPEC: tl.constexpr,
):
    out_ty = c_ptr.dtype.element_ty
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    num_tiles = num_pid_m * num_pid_n
    k_steps = tl.cdiv(K, BK)

    if USE_TMA:
        a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[stride_am, 1],
                                           block_shape=[BM, BK])
        b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[stride_bn, 1],
                                           block_shape=[BN, BK])
        if EPI_HALVES:
            c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[stride_cm, 1],
                                               block_shape=[BM, BN // 2])
        else:
            c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[stride_cm, 1],
                                               block_shape=[BM, BN])
    else:
        rk = tl.arange(0, BK)

    # The epilogue recomputes its tile coordinates from its own counter instead of reusing the
    # main loop's, so that after flattening the pipeliner does not have to keep one value alive
    # from the prologue of tile t+1 to the epilogue of tile t.
    epi_tile = pid - NUM_SMS
    for tile in tl.range(pid, num_tiles, NUM_SMS, flatten=True, warp_specialize=WARP_SPEC):
        pid_m, pid_n = _grouped_tile(tile, num_pid_m, num_pid_n, GROUP_SIZE_M)
        off_m = pid_m * BM
        off_n = pid_n * BN
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        if USE_TMA:
            for ks in range(k_steps):
                a = a_desc.load([off_m, ks * BK])
                b = b_desc.load([off_n, ks * BK])
                acc = tl.dot(a, b.T, acc)
        else:
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
        if USE_TMA:
            if EPI_HALVES:
                halves = tl.permute(tl.reshape(acc, (BM, 2, BN // 2)), (0, 2, 1))
                left, right = tl.split(halves)
                c_desc.store([cm * BM, cn * BN], left.to(out_ty))
                c_desc.store([cm * BM, cn * BN + BN // 2], right.to(out_ty))
            else:
                c_desc.store([cm * BM, cn * BN], acc.to(out_ty))
        else:
            om = cm * BM + tl.arange(0, BM)
            on = cn * BN + tl.arange(0, BN)
            tl.store(c_ptr + om[:, None] * stride_cm + on[None, :], acc.to(out_ty),
                     mask=(om[:, None] < M) & (on[None, :] < N))


def _persistent_configs():
    if _INTERPRET:
        return [triton.Config({"BM": 32, "BN": 32, "BK": 64, "GROUP_SIZE_M": 2, "EPI_HALVES": True,
                               "WARP_SPEC": False}, num_warps=4, num_stages=2)]

    def cfg(bm, bn, bk, stages, warps=8, group=8, halves=True, ws=False):
        return triton.Config({"BM": bm, "BN": bn, "BK": bk, "GROUP_SIZE_M": group,
                              "EPI_HALVES": halves, "WARP_SPEC": ws},
                             num_warps=warps, num_stages=stages)

    configs = [
        cfg(128, 256, 64, 3),
        cfg(128, 256, 64, 4),
        cfg(128, 256, 64, 3, halves=False),
        cfg(256, 128, 64, 3),
        cfg(256, 128, 64, 4),
        cfg(128, 128, 64, 4),
        cfg(128, 128, 64, 5, warps=4),
        cfg(128, 256, 64, 3, group=16),
    ]
    # Warp-specialized tile loop (a TMA producer warp feeding the MMA warps): compiled by
    # Triton >= 3.5 for sm_90+ and kept only there.
    if torch.cuda.is_available() and torch.cuda.get_device_capability()[0] >= 9:
        configs += [cfg(128, 256, 64, 3, ws=True)]
    return configs


def _prune_persistent(configs, named_args, **kwargs):
    # Warp specialization is only used with the TMA loads it was validated with.
    use_tma = kwargs.get("USE_TMA", named_args.get("USE_TMA", False))
    kept = [c for c in configs if use_tma or not c.kwargs["WARP_SPEC"]]
    return kept or configs


_gemm_persistent = triton.autotune(
    configs=_persistent_configs(),
    key=["M", "N", "K", "USE_TMA"],
    prune_configs_by=None if _INTERPRET else {"early_config_prune": _prune_persistent},
)(_gemm_persistent_kernel)


# --------------------------------------------------------------------------------------------
# Host side
# --------------------------------------------------------------------------------------------
_NUM_SMS = {}


def _num_sms(device):
    if device.type != "cuda":
        return 4  # interpreter: a few "SMs" so that each program loops over several tiles
    idx = device.index if device.index is not None else torch.cuda.current_device()
    if idx not in _NUM_SMS:
        _NUM_SMS[idx] = torch.cuda.get_device_properties(idx).multi_processor_count
    return _NUM_SMS[idx]


def _set_allocator(device):
    # Device-side tensor descriptors need a small global scratch buffer per launch.
    def alloc(size, alignment, stream):
        return torch.empty(size, dtype=torch.int8, device=device)

    triton.set_allocator(alloc)


def _tma_ok(A, B, C):
    if A.device.type == "cuda" and torch.cuda.get_device_capability(A.device)[0] < 9:
        return False
    # TMA needs 16-byte aligned base addresses and row strides.
    es = A.element_size()
    return all(t.data_ptr() % 16 == 0 for t in (A, B, C)) and (A.shape[1] * es) % 16 == 0 \
        and (C.shape[1] * es) % 16 == 0


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

    use_tma = _tma_ok(A, B, C)
    if use_tma:
        _set_allocator(A.device)
    num_sms = _num_sms(A.device)
    grid = lambda meta: (min(num_sms, triton.cdiv(M, meta["BM"]) * triton.cdiv(N, meta["BN"])),)
    _gemm_persistent[grid](A, B, C, M, N, K, A.stride(0), B.stride(0), C.stride(0),
                           NUM_SMS=num_sms, USE_TMA=use_tma)
    return C
