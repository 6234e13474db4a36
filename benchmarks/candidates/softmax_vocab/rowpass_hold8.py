"""Row softmax over vocabulary-sized rows, expert Triton implementation.

Computes y[m, :] = exp(x[m, :] - max_m) / sum(exp(x[m, :] - max_m)) in fp32, for x: [M, N]
(bfloat16 on the GPU) and y: [M, N] float32.

Design (memory-bound; the goal is the fewest passes over x at full bandwidth):
  * rows that fit on chip (next_pow2(N) <= 16384): one block per row, max / exp / sum /
    normalize from registers, so x is read once and y written once; a persistent grid of
    32 // num_warps programs per SM strides over the rows with tl.range(num_stages=3), which
    prefetches the next two rows while the current one is reduced (Triton tutorial 02);
  * wider rows, many of them (M >= #SMs and the row waves fill the GPU to >= 75 %): online
    softmax in ONE kernel, one program per SM that owns whole rows.  Pass 1 streams the row
    from HBM keeping a running max m and a sum d rescaled by exp(m_old - m_new); pass 2
    walks the same row BACKWARDS and writes exp(x - m) / d, so the re-read starts with the
    blocks read last (still in L2) and x costs one HBM read instead of two.  Tiles are
    [K, TR, 4] with TR = 32 x num_warps: every thread owns K 4-column pieces of a tile and
    keeps its OWN (m, d), so the pass-1 loop has no warp shuffles and no reduction barrier
    (85 SASS instructions per 8 elements instead of 111, no shuffle latency chain); the
    per-thread statistics are merged with one LSE combine per row.  Full tiles are loaded
    unmasked; the partial last tile is peeled out of both loops.
    The first 12 tiles of every row (96 KB of bf16, 32 % of a Qwen row) are loaded once
    into registers at the start of the row (one evict_first burst, in flight while pass 1
    streams the rest), folded into the statistics after the stream, and written from registers at the
    end of pass 2: they are never re-read, so the x that must survive in L2 between the two
    passes drops from 132 x 297 KB = 39 MB to 132 x 201 KB = 27 MB (the measured 87 us
    at 0.63 of SOL fits a pass-2 re-read that mostly misses L2);
  * wider rows, small batch (M < #SMs): the row is cut into S chunks of whole blocks;
    kernel 1 streams a chunk once, keeping the running (m, d), and writes the chunk's
    (m, d); kernel 2 merges the row's S partials with an LSE combine (M = max m_s,
    D = sum d_s exp(m_s - M)), re-reads its chunk and writes exp(x - M) / D: two reads of x
    instead of three.  S is chosen so M * S fills the GPU, so a batch of one row still uses
    ~100 programs; kernel 2 runs the chunks in reverse launch order and walks each chunk
    backwards, so it starts with the data kernel 1 read last (still in L2);
  * exp is exp2((x - m) * log2(e)) (on the row-pass path exp2(x * log2(e) - m') with the
    max kept in log2 units, one FMA per element); x is streamed with evict_first where it is
    read for the last time, and y (written once, never re-read) is stored evict_first on the
    wide-row paths so it does not push out the x that pass 2 is about to re-read.
Launch configuration: fused path num_warps = block // 512 clamped to [4, 16] (16 warps for
8192), 32 // num_warps programs per SM (2 at 16 warps), num_stages=3; row-pass path one
program per SM, num_warps=8, [4, 256, 4] tiles (4096 columns, 8 KB of bf16; 16 elements and
one (m, d) per thread per tile), 12 head tiles (96 KB) held in 96 registers per thread (255
registers, no spill with ptxas 12.9), num_stages=8 (seven 8 KB tiles in flight per SM
besides the head burst);
split path 4096-element blocks with 8 warps when the grid is full, else
1024 with 4 warps, ~4 programs per SM, num_stages=2.
Dtypes come from the pointers, so the kernels run bf16 on the GPU and fp16 under
TRITON_INTERPRET=1.
"""
import os

import torch
import triton
import triton.language as tl

_INTERPRET = os.environ.get("TRITON_INTERPRET", "0") == "1"
LOG2E = tl.constexpr(1.4426950408889634)
MAX_FUSED = 16384          # widest row kept whole in registers (64 KB of fp32 per program)
# Row-pass path: [ROW_K, ROW_TR, 4] tiles (ROW_TR = 32 x ROW_WARPS: one 4-column piece per
# thread per K-slice), ROW_HOLD head tiles kept in registers.  8 warps: 255 registers per thread, 96 of them hold the head.
# Under the interpreter the tiles are small (512 columns), so the smoke shape m3_n20011
# (row-pass path with 2 virtual SMs) runs the head / streamed / peeled-tail code.
ROW_WARPS = 8
ROW_K = 2 if _INTERPRET else 4
ROW_TR = 64 if _INTERPRET else 256
ROW_HOLD = 12
ROW_STAGES = 8
ROW_FIRST_POLICY = ""          # pass-1 (first read) L2 policy; "" = default
FUSED_STAGES = 3


@triton.jit
def _softmax_rows_kernel(X, Y, n_rows, n_cols, stride_x, stride_y,
                         BLOCK: tl.constexpr, NUM_STAGES: tl.constexpr):
    """y[row] = softmax(x[row]) for rows pid, pid + nprog, ...; the whole row is one block."""
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    cols = tl.max_contiguous(tl.multiple_of(tl.arange(0, BLOCK), BLOCK), BLOCK)
    mask = cols < n_cols
    for row in tl.range(pid, n_rows, nprog, num_stages=NUM_STAGES):
        row64 = tl.cast(row, tl.int64)      # (the interpreter's tl.range yields Python ints)
        x = tl.load(X + row64 * stride_x + cols, mask=mask, other=float("-inf"),
                    eviction_policy="evict_first").to(tl.float32)
        m = tl.max(x, axis=0)
        e = tl.exp2((x - m) * LOG2E)
        d = tl.sum(e, axis=0)
        tl.store(Y + row64 * stride_y + cols, e * (1.0 / d), mask=mask)


@triton.jit
def _to_f32_alt(h):
    """bf16 -> fp32 through integer ops: the value of h.to(tl.float32) by another instruction
    sequence, so the compiler does not merge it with the pass-1 conversion of the held head
    (which would keep an fp32 copy, twice the registers, alive across pass 2)."""
    if h.dtype == tl.bfloat16:
        return (h.to(tl.int16, bitcast=True).to(tl.int32) << 16).to(tl.float32, bitcast=True)
    else:
        return h.to(tl.float32)


@triton.jit
def _fold(m, d, x):
    """Online update of the per-thread running max m (log2 units) and sum d by one
    [K, TR, 4] fp32 tile; axes 0 and 2 live inside one thread, so there are no shuffles and
    no barrier: the running sum is rescaled by exp2(m_old - m_new)."""
    m_new = tl.maximum(m, tl.max(tl.max(x, axis=2), axis=0) * LOG2E)
    d = d * tl.exp2(m - m_new) + tl.sum(tl.sum(tl.exp2(x * LOG2E - m_new[None, :, None]),
                                               axis=2), axis=0)
    return m_new, d


@triton.jit
def _emit(y_ptr, h, m_row, inv_d):
    """y = exp2(x * log2(e) - m) / d for a held (register) tile."""
    tl.store(y_ptr, tl.exp2(_to_f32_alt(h) * LOG2E - m_row) * inv_d,
             eviction_policy="evict_first")


@triton.jit
def _softmax_row_2pass_kernel(X, Y, n_rows, n_cols, stride_x, stride_y,
                              K: tl.constexpr, TR: tl.constexpr, NH: tl.constexpr,
                              NUM_STAGES: tl.constexpr, FIRST_POLICY: tl.constexpr):
    """Rows pid, pid + nprog, ...: online softmax in two passes over the row, in tiles of
    BLOCK = K * TR * 4 columns laid out [K, TR, 4] (thread t of the CTA owns the 4-column
    pieces t, t + TR, ... of a tile: coalesced loads / 16-byte fp32 stores, and its own
    running (m, d)).  The first NH tiles of the row (the head) are loaded once into registers
    and never re-read; pass 1 streams tiles NH .. n-1 from HBM (full tiles unmasked, the
    partial last tile peeled), folds the head in, merges the per-thread statistics with an
    LSE combine; pass 2 re-reads the streamed part backwards (from L2: the last-read tiles
    first) and writes y, then writes the head from registers.  NH is 0, 4, 8 or 12; requires
    n_cols >= (NH + 1) * BLOCK, so the first streamed tile is full and every thread's running
    max is finite after it."""
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    BLOCK: tl.constexpr = K * TR * 4
    kk = tl.arange(0, K)
    r = tl.arange(0, TR)
    c = tl.max_contiguous(tl.multiple_of(tl.arange(0, 4), 4), 4)
    offs = kk[:, None, None] * (TR * 4) + r[None, :, None] * 4 + c[None, None, :]
    n_full = n_cols // BLOCK
    tail = n_full * BLOCK < n_cols
    for row in tl.range(pid, n_rows, nprog, num_stages=1):    # (inner loops pipeline)
        row64 = tl.cast(row, tl.int64)      # (the interpreter's tl.range yields Python ints)
        x_row = X + row64 * stride_x
        y_row = Y + row64 * stride_y
        # the head: NH tiles issued at once, in flight while pass 1 streams the rest;
        # read once from HBM, never re-read (evict_first)
        if NH > 0:
            h0 = tl.load(x_row + offs, eviction_policy="evict_first")
            h1 = tl.load(x_row + BLOCK + offs, eviction_policy="evict_first")
            h2 = tl.load(x_row + 2 * BLOCK + offs, eviction_policy="evict_first")
            h3 = tl.load(x_row + 3 * BLOCK + offs, eviction_policy="evict_first")
        if NH > 4:
            h4 = tl.load(x_row + 4 * BLOCK + offs, eviction_policy="evict_first")
            h5 = tl.load(x_row + 5 * BLOCK + offs, eviction_policy="evict_first")
            h6 = tl.load(x_row + 6 * BLOCK + offs, eviction_policy="evict_first")
            h7 = tl.load(x_row + 7 * BLOCK + offs, eviction_policy="evict_first")
        if NH > 8:
            h8 = tl.load(x_row + 8 * BLOCK + offs, eviction_policy="evict_first")
            h9 = tl.load(x_row + 9 * BLOCK + offs, eviction_policy="evict_first")
            h10 = tl.load(x_row + 10 * BLOCK + offs, eviction_policy="evict_first")
            h11 = tl.load(x_row + 11 * BLOCK + offs, eviction_policy="evict_first")
        m = tl.full([TR], float("-inf"), tl.float32)      # per-thread running max * log2(e)
        d = tl.zeros([TR], dtype=tl.float32)
        # pass 1 over the streamed part (x stays in L2 for pass 2: not evict_first)
        for b in tl.range(NH, n_full, num_stages=NUM_STAGES):
            x = tl.load(x_row + b * BLOCK + offs, eviction_policy=FIRST_POLICY).to(tl.float32)
            m_new = tl.maximum(m, tl.max(tl.max(x, axis=2), axis=0) * LOG2E)
            d = d * tl.exp2(m - m_new) + tl.sum(
                tl.sum(tl.exp2(x * LOG2E - m_new[None, :, None]), axis=2), axis=0)
            m = m_new
        if tail:
            cols = n_full * BLOCK + offs
            x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf"),
                        eviction_policy=FIRST_POLICY).to(tl.float32)
            m, d = _fold(m, d, x)
        if NH > 0:
            m, d = _fold(m, d, h0.to(tl.float32))
            m, d = _fold(m, d, h1.to(tl.float32))
            m, d = _fold(m, d, h2.to(tl.float32))
            m, d = _fold(m, d, h3.to(tl.float32))
        if NH > 4:
            m, d = _fold(m, d, h4.to(tl.float32))
            m, d = _fold(m, d, h5.to(tl.float32))
            m, d = _fold(m, d, h6.to(tl.float32))
            m, d = _fold(m, d, h7.to(tl.float32))
        if NH > 8:
            m, d = _fold(m, d, h8.to(tl.float32))
            m, d = _fold(m, d, h9.to(tl.float32))
            m, d = _fold(m, d, h10.to(tl.float32))
            m, d = _fold(m, d, h11.to(tl.float32))
        m_row = tl.max(m, axis=0)
        inv_d = 1.0 / tl.sum(d * tl.exp2(m - m_row), axis=0)
        # pass 2, last tile first: the tiles pass 1 read last are the likeliest L2 hits
        if tail:
            cols = n_full * BLOCK + offs
            mask = cols < n_cols
            x = tl.load(x_row + cols, mask=mask, other=float("-inf"),
                        eviction_policy="evict_first").to(tl.float32)
            tl.store(y_row + cols, tl.exp2(x * LOG2E - m_row) * inv_d, mask=mask,
                     eviction_policy="evict_first")
        for b in tl.range(0, n_full - NH, num_stages=NUM_STAGES):
            cols = (n_full - 1 - b) * BLOCK + offs
            x = tl.load(x_row + cols, eviction_policy="evict_first").to(tl.float32)
            tl.store(y_row + cols, tl.exp2(x * LOG2E - m_row) * inv_d,
                     eviction_policy="evict_first")
        # the head, from registers
        if NH > 8:
            _emit(y_row + 11 * BLOCK + offs, h11, m_row, inv_d)
            _emit(y_row + 10 * BLOCK + offs, h10, m_row, inv_d)
            _emit(y_row + 9 * BLOCK + offs, h9, m_row, inv_d)
            _emit(y_row + 8 * BLOCK + offs, h8, m_row, inv_d)
        if NH > 4:
            _emit(y_row + 7 * BLOCK + offs, h7, m_row, inv_d)
            _emit(y_row + 6 * BLOCK + offs, h6, m_row, inv_d)
            _emit(y_row + 5 * BLOCK + offs, h5, m_row, inv_d)
            _emit(y_row + 4 * BLOCK + offs, h4, m_row, inv_d)
        if NH > 0:
            _emit(y_row + 3 * BLOCK + offs, h3, m_row, inv_d)
            _emit(y_row + 2 * BLOCK + offs, h2, m_row, inv_d)
            _emit(y_row + BLOCK + offs, h1, m_row, inv_d)
            _emit(y_row + offs, h0, m_row, inv_d)


@triton.jit
def _softmax_partial_kernel(X, M_PART, D_PART, n_cols, stride_x, n_chunks, chunk,
                            BLOCK: tl.constexpr, NUM_STAGES: tl.constexpr):
    """For chunk c of row r (pid = r * n_chunks + c): online (max, sum of exp(x - max)) over
    columns [c * chunk, min((c + 1) * chunk, n_cols)), stored to M_PART / D_PART[r, c]."""
    pid = tl.program_id(0)
    row = pid // n_chunks
    c = pid % n_chunks
    start = c * chunk
    end = tl.minimum(start + chunk, n_cols)
    x_row = X + row.to(tl.int64) * stride_x
    cols0 = tl.max_contiguous(tl.multiple_of(tl.arange(0, BLOCK), BLOCK), BLOCK)
    m = float("-inf")
    d = 0.0
    # chunk is a multiple of BLOCK, so blocks never straddle chunks: only the row end is
    # masked (a mask against n_cols keeps the loads 16-byte vectors when N % 8 == 0)
    for off in tl.range(start, end, BLOCK, num_stages=NUM_STAGES):
        cols = off + cols0
        x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        d = d * tl.exp2((m - m_new) * LOG2E) + tl.sum(tl.exp2((x - m_new) * LOG2E), axis=0)
        m = m_new
    tl.store(M_PART + pid, m)
    tl.store(D_PART + pid, d)


@triton.jit
def _softmax_normalize_kernel(X, Y, M_PART, D_PART, n_cols, stride_x, stride_y, n_chunks, chunk,
                              BLOCK: tl.constexpr, CHUNKS_POW2: tl.constexpr,
                              NUM_STAGES: tl.constexpr):
    """Merge row r's partials (M = max m_c, D = sum d_c * exp(m_c - M)) and write
    y = exp(x - M) / D over chunk c, walking the chunk backwards.  Programs run in reverse
    order of the partial kernel's."""
    pid = tl.num_programs(0) - 1 - tl.program_id(0)
    row = pid // n_chunks
    c = pid % n_chunks
    parts = tl.arange(0, CHUNKS_POW2)
    pmask = parts < n_chunks
    m_p = tl.load(M_PART + row * n_chunks + parts, mask=pmask, other=float("-inf"))
    d_p = tl.load(D_PART + row * n_chunks + parts, mask=pmask, other=0.0)
    m = tl.max(m_p, axis=0)
    inv_d = 1.0 / tl.sum(d_p * tl.exp2((m_p - m) * LOG2E), axis=0)
    start = c * chunk
    n_blk = tl.cdiv(tl.minimum(start + chunk, n_cols) - start, BLOCK)
    row64 = row.to(tl.int64)
    x_row = X + row64 * stride_x
    y_row = Y + row64 * stride_y
    cols0 = tl.max_contiguous(tl.multiple_of(tl.arange(0, BLOCK), BLOCK), BLOCK)
    for i in tl.range(0, n_blk, num_stages=NUM_STAGES):
        cols = start + (n_blk - 1 - i) * BLOCK + cols0
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=float("-inf"),
                    eviction_policy="evict_first").to(tl.float32)
        tl.store(y_row + cols, tl.exp2((x - m) * LOG2E) * inv_d, mask=mask,
                 eviction_policy="evict_first")


_sm_count = {}


def _num_sms(device):
    if device.type != "cuda":
        # CPU interpreter: size the grid for two virtual SMs, so the small smoke shapes still
        # take the multi-row / persistent / row-pass / multi-chunk paths the GPU uses at
        # full size (M = 1 takes the split path, M >= 2 the row-pass path)
        return 2
    idx = device.index if device.index is not None else torch.cuda.current_device()
    if idx not in _sm_count:
        _sm_count[idx] = torch.cuda.get_device_properties(idx).multi_processor_count
    return _sm_count[idx]


def run(x):
    M, N = x.shape
    if x.stride(-1) != 1:
        x = x.contiguous()
    y = torch.empty((M, N), dtype=torch.float32, device=x.device)
    if M == 0 or N == 0:
        return y
    n_sm = _num_sms(x.device)
    stages = 1 if _INTERPRET else 2
    block = triton.next_power_of_2(N)
    if block <= MAX_FUSED:
        num_warps = max(4, min(16, block // 512))        # ~16 fp32 per thread
        grid = (min(M, n_sm * max(1, 32 // num_warps)),)   # persistent: 2-8 programs per SM
        _softmax_rows_kernel[grid](x, y, M, N, x.stride(0), y.stride(0),
                                   BLOCK=block, NUM_STAGES=1 if _INTERPRET else FUSED_STAGES,
                                   num_warps=num_warps)
        return y
    # Row-pass path: one program per SM owns whole rows, when the row waves fill the GPU.
    waves = triton.cdiv(M, n_sm)
    if M >= n_sm and 4 * M >= 3 * waves * n_sm:
        block = ROW_K * ROW_TR * 4
        hold = ROW_HOLD if N >= (ROW_HOLD + 1) * block else 0     # head tiles kept in registers
        _softmax_row_2pass_kernel[(n_sm,)](x, y, M, N, x.stride(0), y.stride(0),
                                           K=ROW_K, TR=ROW_TR, NH=hold,
                                           NUM_STAGES=1 if _INTERPRET else ROW_STAGES,
                                           FIRST_POLICY=ROW_FIRST_POLICY,
                                           num_warps=ROW_WARPS)
        return y
    # Split path: S chunks per row, each a whole number of blocks, M * S ~ 4 programs per SM.
    target = 4 * n_sm
    block = 4096 if M * triton.cdiv(N, 4096) >= target else 1024
    num_warps = 8 if block == 4096 else 4
    n_blocks = triton.cdiv(N, block)
    chunks = max(1, min(n_blocks, triton.cdiv(target, M)))
    chunk = triton.cdiv(n_blocks, chunks) * block
    chunks = triton.cdiv(N, chunk)                         # every chunk starts inside the row
    m_part = torch.empty((M, chunks), dtype=torch.float32, device=x.device)
    d_part = torch.empty((M, chunks), dtype=torch.float32, device=x.device)
    grid = (M * chunks,)
    _softmax_partial_kernel[grid](x, m_part, d_part, N, x.stride(0), chunks, chunk,
                                  BLOCK=block, NUM_STAGES=stages, num_warps=num_warps)
    _softmax_normalize_kernel[grid](x, y, m_part, d_part, N, x.stride(0), y.stride(0), chunks, chunk,
                                    BLOCK=block, CHUNKS_POW2=triton.next_power_of_2(chunks),
                                    NUM_STAGES=stages, num_warps=num_warps)
    return y
