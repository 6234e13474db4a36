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
    walks the same row BACKWARDS and writes exp(x - m) / d.  Only #SMs rows (132 x 297 KB =
    40 MB for the Qwen vocabulary) are in flight, so the row is still in L2 when pass 2
    re-reads it, and walking it backwards re-reads the most recently read blocks first:
    x costs one HBM read instead of two.  The block is a [32, 256] tile whose 256-wide
    sub-rows each live in one warp, so pass 1 keeps one (m, d) per sub-row and reduces
    inside warps only (no block-wide barrier per block); the 32 sub-row statistics are
    merged with an LSE combine once per row;
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
program per SM, num_warps=32 (1024 threads, 8 fp32 per thread per tile, one warp per
sub-row), 8192-element [32, 256] tiles, num_stages=4 (three 16 KB tiles in flight per SM);
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
ROW_SUB = 32               # row-pass tile: ROW_SUB sub-rows of ROW_TILE columns
ROW_TILE = 256             # one warp's width of 16-byte bf16 vectors (32 lanes x 8)
ROW_WARPS = 32
ROW_STAGES = 4
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
def _softmax_row_2pass_kernel(X, Y, n_rows, n_cols, stride_x, stride_y,
                              SUB: tl.constexpr, TILE: tl.constexpr, NUM_STAGES: tl.constexpr):
    """Rows pid, pid + nprog, ...: pass 1 online (m, d) over [SUB, TILE] tiles (one (m, d)
    per sub-row, reduced inside a warp; m in log2 units), pass 2 re-reads the row backwards
    (from L2) and writes y.  Requires n_cols > SUB * TILE, so the first tile is full and
    every sub-row's running max is finite after it."""
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    BLOCK: tl.constexpr = SUB * TILE
    sub = tl.arange(0, SUB)
    lane = tl.max_contiguous(tl.multiple_of(tl.arange(0, TILE), TILE), TILE)
    offs = sub[:, None] * TILE + lane[None, :]
    n_blocks = tl.cdiv(n_cols, BLOCK)
    for row in tl.range(pid, n_rows, nprog, num_stages=1):    # (inner loops pipeline)
        row64 = tl.cast(row, tl.int64)
        x_row = X + row64 * stride_x
        y_row = Y + row64 * stride_y
        m = tl.full([SUB], float("-inf"), tl.float32)      # running max * log2(e)
        d = tl.zeros([SUB], dtype=tl.float32)
        # pass 1 (x stays in L2 for pass 2: default policy)
        for b in tl.range(0, n_blocks, num_stages=NUM_STAGES):
            cols = b * BLOCK + offs
            x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
            m_new = tl.maximum(m, tl.max(x, axis=1) * LOG2E)
            d = d * tl.exp2(m - m_new) + tl.sum(tl.exp2(x * LOG2E - m_new[:, None]), axis=1)
            m = m_new
        m_row = tl.max(m, axis=0)
        inv_d = 1.0 / tl.sum(d * tl.exp2(m - m_row), axis=0)
        # pass 2, last block first: the blocks pass 1 read last are the likeliest L2 hits
        for b in tl.range(0, n_blocks, num_stages=NUM_STAGES):
            cols = (n_blocks - 1 - b) * BLOCK + offs
            mask = cols < n_cols
            x = tl.load(x_row + cols, mask=mask, other=float("-inf"),
                        eviction_policy="evict_first").to(tl.float32)
            tl.store(y_row + cols, tl.exp2(x * LOG2E - m_row) * inv_d, mask=mask,
                     eviction_policy="evict_first")


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
        _softmax_row_2pass_kernel[(n_sm,)](x, y, M, N, x.stride(0), y.stride(0),
                                           SUB=ROW_SUB, TILE=ROW_TILE,
                                           NUM_STAGES=1 if _INTERPRET else ROW_STAGES,
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
