"""Fused linear + cross-entropy (LM head, mean CE loss, dx and dW): the expert Triton
implementation, exp2 ablated.

Gold-set ablation `exp_not_exp2`: identical to tasks/fused_linear_cross_entropy/expert.py except
that every exponential is the natural tl.exp (no log2(e) prescale, no exp2) and the LSE is kept
in the natural-log domain (tl.log, no ln 2 conversion).

Computes, for x: [BT, H], W: [V, H] (bf16) and targets y: [BT]:

    z    = x @ W^T rounded to bf16 (never all at once: chunk by chunk)
    lse  = logsumexp(z[t]),  loss = mean_t(lse[t] - z[t, y[t]])                    (fp32)
    g    = (softmax(z[t]) - onehot(y[t])) / BT, rounded to bf16
    dx   = g @ W,   dW = g^T @ x   (fp32 accumulation, bf16 results)

Design (the op is dominated by three BT x V x H GEMMs; the [BT, V] logits are the memory
problem):
  * Token chunks: rows are processed C at a time, C = a power of two chosen so the bf16
    [C, V] logits buffer stays under ~512 MiB (>= 2048 rows for GEMM efficiency). Only one
    chunk of logits exists at any time, and it is reused for its own gradient.
  * GEMM 1 (logits) has a fused LSE epilogue: while the [BM, BN] fp32 tile is still in
    registers it is rounded to bf16 (stored for the gradient pass), and per row and per
    128-column part it emits the running max and sum of exp (the online-softmax partials),
    plus the target logit when the target falls in the tile. No separate max/sum pass over
    the logits is needed.
  * One program per row then merges the ~V/128 partials into the LSE (natural log), writes
    the row's loss, and turns its logits row into g in place (exp, subtract 1 at the target,
    scale by 1/BT): the backward is done during the forward.
  * GEMM 2: dx[chunk] = g @ W.  GEMM 3: dW += g^T @ x[chunk], accumulated across chunks in an
    fp32 buffer (first chunk stores, middle chunks add, the last adds and writes bf16; a single
    chunk writes bf16 directly).
  * One generic persistent GEMM kernel serves all three (operand layouts as constexpr flags):
    NUM_SMS programs walk the output tiles in grouped (GROUP_M) order; on sm_90+ the operands
    move through TMA tensor descriptors (transposed operands as transposed descriptor tiles)
    feeding wgmma, elsewhere through masked pointer loads. Autotuned per shape on the GPU; one
    small config under TRITON_INTERPRET=1.
  * The loss is reduced by a final one-program kernel (deterministic order).
Dtypes come from the pointers, so the same code runs bf16 on the GPU and fp16 under the
interpreter.
"""
import os

import torch
import triton
import triton.language as tl

_INTERPRET = os.environ.get("TRITON_INTERPRET", "0") == "1"

PART = 32 if _INTERPRET else 128          # columns per online-softmax partial
CHUNK_BUDGET = 1 << 28                     # max elements of the bf16 logits chunk (512 MiB)
CHUNK_MIN = 2048
if _INTERPRET:
    CHUNK_BUDGET, CHUNK_MIN = 1 << 12, 16  # exercise several chunks on tiny smoke shapes


@triton.jit
def _grouped_tile(tile_id, num_pid_m, num_pid_n, GROUP_M: tl.constexpr):
    per_group = GROUP_M * num_pid_n
    group = tile_id // per_group
    first_m = group * GROUP_M
    span = tl.minimum(num_pid_m - first_m, GROUP_M)
    local = tile_id % per_group
    return first_m + local % span, local // span


@triton.jit
def _gemm_kernel(
    A, B, C, ACC, Y, PM, PD, ZY,
    M, N, K, lda, ldb, ldc, n_parts,
    A_T: tl.constexpr,        # A stored [K, M] (use A^T), else [M, K]
    B_T: tl.constexpr,        # B stored [N, K] (nn.Linear weight), else [K, N]
    EPI_LSE: tl.constexpr,    # logits epilogue: bf16 tile + per-part (max, sumexp) + target
    ACC_IN: tl.constexpr,     # add the fp32 ACC tile before storing to C
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr,
    PART_N: tl.constexpr, NUM_SMS: tl.constexpr, USE_TMA: tl.constexpr,
    STORE_TMA: tl.constexpr,  # store C through a descriptor (16-bit C only: smem staging)
):
    out_ty = C.dtype.element_ty
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    num_tiles = num_pid_m * num_pid_n
    k_steps = tl.cdiv(K, BK)

    if USE_TMA:
        if A_T:
            a_desc = tl.make_tensor_descriptor(A, shape=[K, M], strides=[lda, 1], block_shape=[BK, BM])
        else:
            a_desc = tl.make_tensor_descriptor(A, shape=[M, K], strides=[lda, 1], block_shape=[BM, BK])
        if B_T:
            b_desc = tl.make_tensor_descriptor(B, shape=[N, K], strides=[ldb, 1], block_shape=[BN, BK])
        else:
            b_desc = tl.make_tensor_descriptor(B, shape=[K, N], strides=[ldb, 1], block_shape=[BK, BN])
    if STORE_TMA:
        c_desc = tl.make_tensor_descriptor(C, shape=[M, N], strides=[ldc, 1], block_shape=[BM, BN])

    for tile in tl.range(pid, num_tiles, NUM_SMS):
        pid_m, pid_n = _grouped_tile(tile, num_pid_m, num_pid_n, GROUP_M)
        off_m = pid_m * BM
        off_n = pid_n * BN
        rm = off_m + tl.arange(0, BM)
        rn = off_n + tl.arange(0, BN)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        if USE_TMA:
            for ks in range(k_steps):
                kk = ks * BK
                if A_T:
                    a = a_desc.load([kk, off_m]).T
                else:
                    a = a_desc.load([off_m, kk])
                if B_T:
                    b = b_desc.load([off_n, kk]).T
                else:
                    b = b_desc.load([kk, off_n])
                acc = tl.dot(a, b, acc)
        else:
            rk = tl.arange(0, BK)
            for ks in range(k_steps):
                kk = ks * BK + rk
                if A_T:
                    a = tl.load(A + kk[None, :] * lda + rm[:, None],
                                mask=(kk[None, :] < K) & (rm[:, None] < M), other=0.0)
                else:
                    a = tl.load(A + rm[:, None] * lda + kk[None, :],
                                mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
                if B_T:
                    b = tl.load(B + rn[None, :] * ldb + kk[:, None],
                                mask=(rn[None, :] < N) & (kk[:, None] < K), other=0.0)
                else:
                    b = tl.load(B + kk[:, None] * ldb + rn[None, :],
                                mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
                acc = tl.dot(a, b, acc)

        if EPI_LSE:
            # logits tile: keep it (rounded) for the gradient pass, and reduce it to
            # online-softmax partials (max, sum of exp) per PART_N columns while it is in registers
            zb = acc.to(out_ty)
            if STORE_TMA:
                c_desc.store([off_m, off_n], zb)
            else:
                tl.store(C + rm[:, None] * ldc + rn[None, :], zb,
                         mask=(rm[:, None] < M) & (rn[None, :] < N))
            zf = zb.to(tl.float32)
            z2 = tl.where(rn[None, :] < N, zf, float("-inf"))
            z3 = tl.reshape(z2, (BM, BN // PART_N, PART_N))
            pmax = tl.max(z3, axis=2)
            psafe = tl.where(pmax == float("-inf"), 0.0, pmax)
            psum = tl.sum(tl.exp(z3 - psafe[:, :, None]), axis=2)
            parts = off_n // PART_N + tl.arange(0, BN // PART_N)
            pmask = (rm[:, None] < M) & (parts[None, :] < n_parts)
            poffs = rm[:, None] * n_parts + parts[None, :]
            tl.store(PM + poffs, pmax, mask=pmask)
            tl.store(PD + poffs, psum, mask=pmask)
            tgt = tl.load(Y + rm, mask=rm < M, other=-1)
            zy = tl.sum(tl.where(rn[None, :] == tgt[:, None], zf, 0.0), axis=1)
            tl.store(ZY + rm, zy, mask=(rm < M) & (tgt >= off_n) & (tgt < off_n + BN))
        else:
            if ACC_IN:
                # the fp32 partial sums stream through registers (a [BM, BN] fp32 staging
                # buffer in shared memory would not fit next to the pipeline)
                acc += tl.load(ACC + rm[:, None] * ldc + rn[None, :],
                               mask=(rm[:, None] < M) & (rn[None, :] < N), other=0.0)
            if STORE_TMA:
                c_desc.store([off_m, off_n], acc.to(out_ty))
            else:
                tl.store(C + rm[:, None] * ldc + rn[None, :], acc.to(out_ty),
                         mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def _ce_rows_kernel(L, ldl, Y, PM, PD, ZY, LOSS, V, n_parts, inv_bt,
                    BLOCK: tl.constexpr, PBLOCK: tl.constexpr):
    """Per row: merge the partials into the LSE, write the row loss, and overwrite the logits
    row with g = (softmax - onehot) * inv_bt (in place, in the logits dtype)."""
    row = tl.program_id(0)
    prow = row.to(tl.int64) * n_parts
    m_run = tl.full([], float("-inf"), tl.float32)
    d_run = tl.zeros([], dtype=tl.float32)
    for p0 in range(0, n_parts, PBLOCK):
        pi = p0 + tl.arange(0, PBLOCK)
        pm = tl.load(PM + prow + pi, mask=pi < n_parts, other=float("-inf"))
        pd = tl.load(PD + prow + pi, mask=pi < n_parts, other=0.0)
        m_new = tl.maximum(m_run, tl.max(pm, axis=0))
        d_run = d_run * tl.exp(m_run - m_new) + tl.sum(pd * tl.exp(pm - m_new), axis=0)
        m_run = m_new
    lse = m_run + tl.log(d_run)                         # natural-log LSE
    tgt = tl.load(Y + row)
    tl.store(LOSS + row, lse - tl.load(ZY + row))

    base = L + row.to(tl.int64) * ldl
    for c0 in range(0, V, BLOCK):
        cols = c0 + tl.arange(0, BLOCK)
        cm = cols < V
        z = tl.load(base + cols, mask=cm, other=0.0).to(tl.float32)
        p = tl.exp(z - lse)
        g = tl.where(cols == tgt, p - 1.0, p) * inv_bt
        tl.store(base + cols, g.to(L.dtype.element_ty), mask=cm)


@triton.jit
def _mean_kernel(LOSS, OUT, n, inv_n, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i0 in range(0, n, BLOCK):
        i = i0 + tl.arange(0, BLOCK)
        acc += tl.load(LOSS + i, mask=i < n, other=0.0)
    tl.store(OUT, tl.sum(acc, axis=0) * inv_n)


# --------------------------------------------------------------------------------------------
# configs
# --------------------------------------------------------------------------------------------
def _configs():
    if _INTERPRET:
        return [triton.Config({"BM": 64, "BN": 64, "BK": 64, "GROUP_M": 2}, num_warps=4,
                              num_stages=2)]

    def cfg(bm, bn, bk, stages, warps=8, group=8):
        return triton.Config({"BM": bm, "BN": bn, "BK": bk, "GROUP_M": group},
                             num_warps=warps, num_stages=stages)

    return [
        cfg(128, 256, 64, 3),          # 4 stages would not fit next to the C staging tile
        cfg(256, 128, 64, 3),
        cfg(128, 128, 64, 4),
        cfg(128, 128, 64, 5, warps=4),
        cfg(128, 256, 64, 3, group=16),
    ]


_KEY = ["M", "N", "K", "A_T", "B_T", "EPI_LSE", "ACC_IN", "USE_TMA", "STORE_TMA"]
_gemm_plain = triton.autotune(configs=_configs(), key=_KEY)(_gemm_kernel)
# the accumulating GEMM reads and writes its output: restore it between tuning runs
_gemm_accum = triton.autotune(configs=_configs(), key=_KEY, restore_value=["C"])(_gemm_kernel)

_NUM_SMS = {}
_TMA_OK = {}


def _num_sms(device):
    if device.type != "cuda":
        return 4
    idx = device.index if device.index is not None else torch.cuda.current_device()
    if idx not in _NUM_SMS:
        _NUM_SMS[idx] = torch.cuda.get_device_properties(idx).multi_processor_count
    return _NUM_SMS[idx]


def _set_allocator(device):
    def alloc(size, alignment, stream):
        return torch.empty(size, dtype=torch.int8, device=device)

    triton.set_allocator(alloc)


def _gemm(A, B, C, M, N, K, lda, ldb, ldc, A_T, B_T, ACC=None, lse=None):
    """C[M, N] = op(A) @ op(B) (+ ACC), or the logits GEMM with its LSE epilogue."""
    dev = A.device
    num_sms = _num_sms(dev)
    Y, PM, PD, ZY, n_parts = lse if lse is not None else (C, C, C, C, 1)
    acc_in = ACC is not None
    kern = _gemm_accum if (acc_in and ACC.data_ptr() == C.data_ptr()) else _gemm_plain
    grid = lambda meta: (min(num_sms, triton.cdiv(M, meta["BM"]) * triton.cdiv(N, meta["BN"])),)
    args = (A, B, C, ACC if acc_in else C, Y, PM, PD, ZY, M, N, K, lda, ldb, ldc, n_parts)
    flags = dict(A_T=A_T, B_T=B_T, EPI_LSE=lse is not None, ACC_IN=acc_in, PART_N=PART,
                 NUM_SMS=num_sms)
    store_tma = C.element_size() == 2
    use_tma = False
    if dev.type == "cuda" and not _INTERPRET:
        idx = dev.index if dev.index is not None else torch.cuda.current_device()
        variant = (idx, A_T, B_T, lse is not None, acc_in, store_tma)
        ok = _TMA_OK.get(variant)
        if ok is None:
            ok = torch.cuda.get_device_capability(dev)[0] >= 9
        es = A.element_size()
        aligned = all(t.data_ptr() % 16 == 0 for t in (A, B, C)) and \
            all((s * es) % 16 == 0 for s in (lda, ldb)) and (ldc * C.element_size()) % 16 == 0
        use_tma = ok and aligned
        if use_tma:
            _set_allocator(dev)
            if variant not in _TMA_OK:       # first TMA launch of this variant: fall back on error
                try:
                    kern[grid](*args, USE_TMA=True, STORE_TMA=store_tma, **flags)
                    _TMA_OK[variant] = True
                    return
                except Exception:
                    _TMA_OK[variant] = False
                    use_tma = False
    kern[grid](*args, USE_TMA=use_tma, STORE_TMA=use_tma and store_tma, **flags)


def _chunk_rows(BT, V):
    """Rows per chunk: the largest power of two whose bf16 [rows, V] logits fit the budget,
    but at least CHUNK_MIN (so the dx GEMM, M = rows, still fills the GPU) and at most BT."""
    c = 1 << max(0, (max(1, CHUNK_BUDGET // V)).bit_length() - 1)
    return min(BT, max(CHUNK_MIN, c))


def run(x, W, y):
    x = x.contiguous()
    W = W.contiguous()
    y = y.contiguous()
    BT, H = x.shape
    V = W.shape[0]
    dev = x.device
    dx = torch.empty_like(x)
    dW = torch.empty_like(W)
    loss = torch.empty((), dtype=torch.float32, device=dev)
    row_loss = torch.empty((BT,), dtype=torch.float32, device=dev)

    C = _chunk_rows(BT, V)
    n_chunks = triton.cdiv(BT, C)
    n_parts = triton.cdiv(V, PART)
    logits = torch.empty((C, V), dtype=x.dtype, device=dev)
    pm = torch.empty((C, n_parts), dtype=torch.float32, device=dev)
    pd = torch.empty((C, n_parts), dtype=torch.float32, device=dev)
    zy = torch.empty((C,), dtype=torch.float32, device=dev)
    acc = torch.empty((V, H), dtype=torch.float32, device=dev) if n_chunks > 1 else None
    inv_bt = 1.0 / BT

    for ci in range(n_chunks):
        r0 = ci * C
        rows = min(C, BT - r0)
        xc = x[r0:r0 + rows]
        # 1. logits chunk with the LSE epilogue
        _gemm(xc, W, logits, rows, V, H, H, H, V, A_T=False, B_T=True,
              lse=(y[r0:r0 + rows], pm, pd, zy, n_parts))
        # 2. LSE merge, row losses and g = (softmax - onehot) / BT in place
        _ce_rows_kernel[(rows,)](logits, V, y[r0:r0 + rows], pm, pd, zy, row_loss[r0:r0 + rows],
                                 V, n_parts, inv_bt, BLOCK=1024 if _INTERPRET else 4096,
                                 PBLOCK=256 if _INTERPRET else 1024,
                                 num_warps=4 if _INTERPRET else 8)
        # 3. dx[chunk] = g @ W
        _gemm(logits, W, dx[r0:r0 + rows], rows, H, V, V, H, H, A_T=False, B_T=False)
        # 4. dW (+)= g^T @ x[chunk]; fp32 accumulation across chunks
        if n_chunks == 1:
            _gemm(logits, xc, dW, V, H, rows, V, H, H, A_T=True, B_T=False)
        elif ci == 0:
            _gemm(logits, xc, acc, V, H, rows, V, H, H, A_T=True, B_T=False)
        elif ci < n_chunks - 1:
            _gemm(logits, xc, acc, V, H, rows, V, H, H, A_T=True, B_T=False, ACC=acc)
        else:
            _gemm(logits, xc, dW, V, H, rows, V, H, H, A_T=True, B_T=False, ACC=acc)
    _mean_kernel[(1,)](row_loss, loss, BT, inv_bt, BLOCK=1024)
    return loss, dx, dW
