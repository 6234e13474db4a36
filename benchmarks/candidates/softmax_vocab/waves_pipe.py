"""Row softmax over vocabulary-sized rows, expert Triton implementation.

Computes y[m, :] = exp(x[m, :] - max_m) / sum(exp(x[m, :] - max_m)) in fp32, for x: [M, N]
(bfloat16 on the GPU) and y: [M, N] float32.

Design (memory-bound; the goal is the fewest passes over x at full bandwidth):
  * rows that fit on chip (next_pow2(N) <= 16384): one block per row, max / exp / sum /
    normalize from registers, so x is read once and y written once; a persistent grid of
    48 // num_warps programs per SM (3 at 16 warps), capped by what the compiled kernel's
    registers / shared memory let fit on one SM, strides over the rows with
    tl.range(num_stages=3), which prefetches the next two rows while the current one is
    reduced (Triton tutorial 02);
  * wider rows: online softmax.  Each row is cut into S chunks of whole blocks; a partial
    phase streams a chunk once, keeping a running max m and a sum d rescaled by
    exp(m_old - m_new) per block, and writes the chunk's (m, d); a normalize phase merges
    the row's S partials with an LSE combine (M = max m_s, D = sum d_s exp(m_s - M)),
    re-reads its chunk and writes exp(x - M) / D: two reads of x instead of three;
  * the second read must come from L2, but x (78 MB for 256 Qwen rows) is larger than L2,
    so the rows are processed in waves of G rows (G rows of x <= 20 MB) and the waves are
    software-pipelined across launches: launch k runs the normalize phase of wave k - 1
    (programs first in the grid, walking their chunks backwards, so they begin with the
    blocks read last) together with the partial phase of wave k.  Between a chunk's two
    reads only ~2 waves of x (<= 40 MB) pass through L2, and every launch mixes HBM reads
    (the new wave) with HBM writes (y of the previous one).  W waves take W + 1 launches;
    a single wave (small M, e.g. one row) is the plain partial + normalize pair, with S
    chosen so M * S fills the GPU (~100 programs for one row);
  * exp is exp2((x - m) * log2(e)); x is streamed with evict_first where it is read for the
    last time, and y (written once, never re-read) is stored evict_first on the wide-row
    path so it does not push out the x that is about to be re-read.
Launch configuration: fused path num_warps = block // 512 clamped to [4, 16] (16 warps for
8192), num_stages=3; wide rows 4096-element blocks with 8 warps when the grid is full, else
1024 with 4 warps, num_stages=2, S such that a wave has ~2 programs per SM per phase
(~4 per SM per launch), or ~4 per SM for a single wave.
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
FUSED_STAGES = 3
# bytes of x per wave: two waves must sit in L2 together (the one being re-read and the
# one being read); tiny under the interpreter so the smoke shapes take several waves
WAVE_BYTES = (64 << 10) if _INTERPRET else (20 << 20)


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
def _partial_chunk(X, M_PART, D_PART, g, n_cols, stride_x, n_chunks, chunk,
                   BLOCK: tl.constexpr, NUM_STAGES: tl.constexpr):
    """For chunk c of row r (g = r * n_chunks + c): online (max, sum of exp(x - max)) over
    columns [c * chunk, min((c + 1) * chunk, n_cols)), stored to M_PART / D_PART[r, c]."""
    row = g // n_chunks
    c = g % n_chunks
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
    tl.store(M_PART + g, m)
    tl.store(D_PART + g, d)


@triton.jit
def _normalize_chunk(X, Y, M_PART, D_PART, g, n_cols, stride_x, stride_y, n_chunks, chunk,
                     BLOCK: tl.constexpr, CHUNKS_POW2: tl.constexpr, NUM_STAGES: tl.constexpr):
    """Merge row r's partials (M = max m_c, D = sum d_c * exp(m_c - M)) and write
    y = exp(x - M) / D over chunk c (g = r * n_chunks + c), walking the chunk backwards."""
    row = g // n_chunks
    c = g % n_chunks
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


@triton.jit
def _softmax_partial_kernel(X, M_PART, D_PART, n_cols, stride_x, n_chunks, chunk, g0,
                            BLOCK: tl.constexpr, NUM_STAGES: tl.constexpr):
    """Partial phase of chunks g0 + pid (chunk index c = g % n_chunks inside its row)."""
    _partial_chunk(X, M_PART, D_PART, g0 + tl.program_id(0), n_cols, stride_x, n_chunks,
                   chunk, BLOCK, NUM_STAGES)


@triton.jit
def _softmax_normalize_kernel(X, Y, M_PART, D_PART, n_cols, stride_x, stride_y, n_chunks, chunk,
                              g0, BLOCK: tl.constexpr, CHUNKS_POW2: tl.constexpr,
                              NUM_STAGES: tl.constexpr):
    """Normalize phase of chunks g0 .. g0 + grid - 1, in reverse order of the partial phase."""
    g = g0 + tl.num_programs(0) - 1 - tl.program_id(0)
    _normalize_chunk(X, Y, M_PART, D_PART, g, n_cols, stride_x, stride_y, n_chunks, chunk,
                     BLOCK, CHUNKS_POW2, NUM_STAGES)


@triton.jit
def _softmax_wave_kernel(X, Y, M_PART, D_PART, n_cols, stride_x, stride_y, n_chunks, chunk,
                         norm_g0, n_norm, part_g0,
                         BLOCK: tl.constexpr, CHUNKS_POW2: tl.constexpr,
                         NUM_STAGES: tl.constexpr):
    """Programs [0, n_norm): normalize phase of the previous wave's chunks norm_g0 ..
    norm_g0 + n_norm - 1 (reverse order); programs [n_norm, grid): partial phase of this
    wave's chunks part_g0 + (pid - n_norm)."""
    pid = tl.program_id(0)
    if pid < n_norm:
        _normalize_chunk(X, Y, M_PART, D_PART, norm_g0 + n_norm - 1 - pid, n_cols, stride_x,
                         stride_y, n_chunks, chunk, BLOCK, CHUNKS_POW2, NUM_STAGES)
    else:
        _partial_chunk(X, M_PART, D_PART, part_g0 + pid - n_norm, n_cols, stride_x, n_chunks,
                       chunk, BLOCK, NUM_STAGES)


_sm_count = {}


def _num_sms(device):
    if device.type != "cuda":
        # CPU interpreter: size the grid for one virtual SM, so the small smoke shapes still
        # take the multi-row / persistent / multi-chunk paths the GPU uses at full size
        return 1
    idx = device.index if device.index is not None else torch.cuda.current_device()
    if idx not in _sm_count:
        _sm_count[idx] = torch.cuda.get_device_properties(idx).multi_processor_count
    return _sm_count[idx]


_fit_cache = {}


def _programs_per_sm(kernel, args, want, num_warps, **meta):
    """min(want, the programs of the compiled kernel that fit on one SM by registers, shared
    memory and threads), so a persistent grid never spills into a second wave."""
    key = (id(kernel), want, num_warps, tuple(sorted(meta.items())), args[0].device)
    if key not in _fit_cache:
        fit = min(want, 2)
        try:
            k = kernel.warmup(*args, grid=(1,), num_warps=num_warps, **meta)
            k._init_handles()
            regs_per_warp = (k.n_regs * 32 + 255) // 256 * 256          # allocation unit 256
            by_regs = 65536 // max(1, regs_per_warp * num_warps)
            by_smem = 233472 // (k.metadata.shared + 1024)             # 228 KB per SM
            by_threads = 2048 // (32 * num_warps)
            fit = max(1, min(want, by_regs, by_smem, by_threads))
        except Exception:
            pass
        _fit_cache[key] = fit
    return _fit_cache[key]


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
        args = (x, y, M, N, x.stride(0), y.stride(0))
        fstages = 1 if _INTERPRET else FUSED_STAGES
        per_sm = max(1, 48 // num_warps)                   # 3 at 16 warps, up to 12 at 4
        if not _INTERPRET:
            per_sm = _programs_per_sm(_softmax_rows_kernel, args, per_sm, num_warps,
                                      BLOCK=block, NUM_STAGES=fstages)
        grid = (min(M, n_sm * per_sm),)                    # persistent
        _softmax_rows_kernel[grid](*args, BLOCK=block, NUM_STAGES=fstages, num_warps=num_warps)
        return y
    # Online path: waves of G rows whose x fits in half the L2; S chunks per row.
    g_rows = max(1, WAVE_BYTES // (N * x.element_size()))
    n_waves = triton.cdiv(M, g_rows)
    g_rows = triton.cdiv(M, n_waves)                       # balanced waves
    n_waves = triton.cdiv(M, g_rows)
    target = (4 if n_waves == 1 else 2) * n_sm             # programs per phase launch
    block = 4096 if g_rows * triton.cdiv(N, 4096) >= target else 1024
    num_warps = 8 if block == 4096 else 4
    n_blocks = triton.cdiv(N, block)
    chunks = max(1, min(n_blocks, triton.cdiv(target, g_rows)))
    chunk = triton.cdiv(n_blocks, chunks) * block
    chunks = triton.cdiv(N, chunk)                         # every chunk starts inside the row
    m_part = torch.empty((M, chunks), dtype=torch.float32, device=x.device)
    d_part = torch.empty((M, chunks), dtype=torch.float32, device=x.device)
    pow2 = triton.next_power_of_2(chunks)

    def wave(w):                                           # (first chunk, number of chunks)
        r0 = w * g_rows
        return r0 * chunks, (min(M, r0 + g_rows) - r0) * chunks

    g0, n = wave(0)
    _softmax_partial_kernel[(n,)](x, m_part, d_part, N, x.stride(0), chunks, chunk, g0,
                                  BLOCK=block, NUM_STAGES=stages, num_warps=num_warps)
    for w in range(1, n_waves):
        pg0, pn = wave(w)
        _softmax_wave_kernel[(n + pn,)](x, y, m_part, d_part, N, x.stride(0), y.stride(0),
                                        chunks, chunk, g0, n, pg0,
                                        BLOCK=block, CHUNKS_POW2=pow2, NUM_STAGES=stages,
                                        num_warps=num_warps)
        g0, n = pg0, pn
    _softmax_normalize_kernel[(n,)](x, y, m_part, d_part, N, x.stride(0), y.stride(0), chunks,
                                    chunk, g0, BLOCK=block, CHUNKS_POW2=pow2,
                                    NUM_STAGES=stages, num_warps=num_warps)
    return y
