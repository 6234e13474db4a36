"""Large-vocabulary cross-entropy forward + backward: a row-team kernel (each row read from
HBM once) for every V > 8192, Mistral's 32000 included; the shipped expert kernel below that.

For logits z: [N, V] (bfloat16 on the GPU), target: [N] and ignore_index, with n the number of
rows whose target is not ignore_index, computes

    loss = (1/n) * sum_{valid i} ( lse_i - z[i, target_i] ),  lse_i = log sum_v exp(z[i, v])
    z[i, v] <- ( exp(z[i, v] - lse_i) - [v == target_i] ) / n     (valid rows)
    z[i, v] <- 0                                                  (ignored rows)

and returns loss (0-d float32); the gradient overwrites the logits.

Dispatch: V >= TEAM_MIN_V = 8193 takes the row-team path: Llama-3 128256 and Qwen3 151936
(TEAM = 16 / 19) and Mistral 32000 (TEAM = 4, chunks of 8000 columns, 66 teams); V <= 8192
takes the shipped expert's kernel and launch unchanged. Round 5: the shipped team kernel
(16 warps, 1 program per SM, 16384-column chunks) cut into 2 programs of 8 warps per SM
(8192-column chunks, same 32 columns and 128 registers per thread, pinned by maxnreg): the
programs' barriers, reductions and team waits no longer stall the whole SM in lock-step, and
their loads are issued at staggered times; the chunk max is one cross-warp reduction. Under TRITON_INTERPRET=1 the
threshold is 16384 (smoke V = 20011 team path, V = 1000 expert path).

Row-team design (memory-bound; the goal is logits read from HBM once and written once):
  * a team of TEAM programs (consecutive program ids) shares a row: member j owns columns
    [j * chunk, (j + 1) * chunk) with chunk = V / TEAM rounded up to 64, at most 8192 columns,
    and holds its chunk in registers (32 columns per thread, bf16 kept packed two per 32-bit
    register, loaded as 16-byte vectors), so the row is never re-read; TEAM is picked so that
    each program walks the fewest rows (grid: 2 8-warp, 128-register programs per SM,
    rounded down to a multiple of TEAM; Qwen3: TEAM = 19, chunks of 8000 columns, 13 teams = 247
    programs, 316 rows each; Llama-3: TEAM = 16, chunks of 8064, 16 teams = 256 programs, 256
    rows each); team t walks rows t, t + n_teams, ... (persistent);
  * per row each member computes its chunk's log-sum-exp in fp32 (max, then sum of
    exp2((z - m) log2 e): the online rescale of L1.online_lse happens once per chunk, and the
    chunk partials are merged by an LSE combine) and publishes it as ONE 64-bit word
    XCH[row, member] = gen << 32 | bits(lse_chunk): the value and its ready flag in one
    single-copy-atomic store, so no fence or memset is needed; gen is a per-call generation
    counter (host side, strictly increasing, never specialised), so words left by earlier calls
    never match; the members spin (volatile loads) until all TEAM words of the row carry gen,
    merge them in a fixed order (deterministic, identical in every member), and write
    dz = p * (exp(m - lse) / n) - [v == target] / n over their chunk, where p = exp2((z - m)
    log2 e) (m = the chunk max) is the exponential computed for the chunk's sum and KEPT in
    registers (fp32) until the gradient: one exponential per element instead of two (half the
    MUFU work; team_all.py recomputes it from the packed bf16); two fp32 -> one bf16x2 word by
    cvt.rn.bf16x2.f32, stored as 16-byte vectors;
  * software pipeline (3 rows per program in flight): in the iteration of row r a program
    (1) issues the loads of row r + 2 n_teams, (2) issues the first poll of row r's words,
    (3) reduces and publishes row r + n_teams (loaded one iteration earlier), (4) waits for
    row r's words (published one iteration earlier, so usually already there) and writes row
    r's gradient: the team round trip is hidden behind a row's reduction and ~2 chunks
    (15-30 KB per program, 2 programs per SM at Qwen3) of loads stay in flight;
  * deadlock freedom: a member only waits for words of its own team's rows, which its
    teammates publish before they wait on anything newer; teams are consecutive program ids,
    so with in-order CTA dispatch a waiting program's teammates are resident or start as soon
    as a lower-numbered team finishes; the wait is bounded (MAX_POLLS, ~0.2 s), so a teammate
    that never arrives (another process holding SMs, say) gives a wrong gradient, which any
    check catches, instead of a hung GPU; the kernel needs only TEAM (<= 2 cdiv(V, 8192))
    co-resident programs to make progress, and the grid (2 programs per SM) is sized to be
    resident at once for speed, not for safety (if maxnreg is refused, run() launches the
    same kernel uncapped: fewer programs per SM, still correct and deadlock-free);
  * z[target] is read by the member whose chunk holds it (at prefetch, before any store of
    that row) and that member writes the row's loss (lse - z[target]) / n; ignored rows are
    not read: their members store zeros (member 0 a zero loss) without waiting;
  * row offsets are int64; the valid count n is computed once on the device by a
    one-program kernel; the per-row losses are summed by one torch reduction;
  * under TRITON_INTERPRET=1 programs run one after another, so run() launches the team
    kernel twice with the same gen: POST_ONLY=True publishes every partial, then the normal
    launch finds them and writes the gradient (this exercises the same merge code);
  * if the team kernel fails to compile/launch (or a GPU has fewer SMs than TEAM), run() falls
    back to the shipped row-pass path.
Expert path (V <= 8192): per row an online log-sum-exp over 8192-column blocks (running max,
sum rescaled by exp2((m_old - m_new) log2 e)), then a second loop re-reads the row (L2) and
writes the gradient in place; persistent grid of 2 programs per SM, num_stages=3.
Launch configuration: team kernel num_warps=8, maxnreg=128 (2 programs per SM by
registers; uncapped, Triton 3.6 takes 191), num_stages=1 (the register pipeline is manual),
BLOCK = 8192 columns (4096 bf16x2 words); count kernel 1
program, up to 4096-target blocks.
Dtypes come from the pointers, so the kernels run bf16 on the GPU and fp16 under
TRITON_INTERPRET=1 (fp16 or an odd V takes the unpacked variant of the same kernel).
"""
import os

import torch
import triton
import triton.language as tl

_INTERPRET = os.environ.get("TRITON_INTERPRET", "0") == "1"
MAX_POLLS = tl.constexpr(1 << 18)   # bound of a member's wait for its teammates (~1 us per poll)
LOG2E = tl.constexpr(1.4426950408889634)

@triton.jit
def _count_valid_kernel(TARGET, N_VALID, n_rows, ignore_index, BLOCK: tl.constexpr):
    """N_VALID[0] = number of i < n_rows with TARGET[i] != ignore_index (one program)."""
    acc = tl.zeros([BLOCK], dtype=tl.int32)
    for start in range(0, n_rows, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        t = tl.load(TARGET + offs, mask=offs < n_rows, other=ignore_index)
        acc += (t != ignore_index).to(tl.int32)
    tl.store(N_VALID, tl.sum(acc, axis=0))


@triton.jit
def _ce_fwd_bwd_kernel(Z, TARGET, N_VALID, LOSS_ROWS, n_rows, n_cols, stride_z, ignore_index,
                       BLOCK: tl.constexpr, NUM_STAGES: tl.constexpr):
    """Rows pid, pid + nprog, ...: LOSS_ROWS[row] = (lse - z[target]) / n and the gradient
    (softmax - onehot) / n written over Z[row] (zeros and loss 0 for ignored rows)."""
    dtype = Z.dtype.element_ty
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    cols0 = tl.max_contiguous(tl.multiple_of(tl.arange(0, BLOCK), BLOCK), BLOCK)
    inv_n = 1.0 / tl.load(N_VALID).to(tl.float32)
    for row in tl.range(pid, n_rows, nprog):
        z_row = Z + tl.cast(row, tl.int64) * stride_z
        y = tl.load(TARGET + row)
        if y == ignore_index:
            zero = tl.zeros([BLOCK], dtype=dtype)
            for off in tl.range(0, n_cols, BLOCK):
                cols = off + cols0
                tl.store(z_row + cols, zero, mask=cols < n_cols)
            tl.store(LOSS_ROWS + row, 0.0)
        else:
            z_y = tl.load(z_row + y).to(tl.float32)            # before pass 2 overwrites it
            # pass 1: online log-sum-exp
            m = float("-inf")
            d = 0.0
            for off in tl.range(0, n_cols, BLOCK, num_stages=NUM_STAGES):
                cols = off + cols0
                z = tl.load(z_row + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
                m_new = tl.maximum(m, tl.max(z, axis=0))
                d = d * tl.exp2((m - m_new) * LOG2E) + tl.sum(tl.exp2((z - m_new) * LOG2E), axis=0)
                m = m_new
            tl.store(LOSS_ROWS + row, (m + tl.log(d) - z_y) * inv_n)
            # pass 2: dz = p / n - onehot / n, in place
            scale = inv_n / d
            for off in tl.range(0, n_cols, BLOCK, num_stages=NUM_STAGES):
                cols = off + cols0
                mask = cols < n_cols
                z = tl.load(z_row + cols, mask=mask, other=float("-inf"),
                            eviction_policy="evict_first").to(tl.float32)
                g = tl.exp2((z - m) * LOG2E) * scale
                g = tl.where(cols == y, g - inv_n, g)
                tl.store(z_row + cols, g.to(dtype), mask=mask)


@triton.jit
def _ce_rowpass_kernel(Z, TARGET, N_VALID, LOSS_ROWS, n_rows, n_cols, stride_z, ignore_index,
                       SUB: tl.constexpr, TILE: tl.constexpr, P1_STAGES: tl.constexpr,
                       P2_STAGES: tl.constexpr):
    """Rows pid, pid + nprog, ...: pass 1 online (m, d) over [SUB, TILE] tiles (one (m, d)
    per sub-row, reduced inside a warp), LSE-combined once per row; pass 2 re-reads the row
    backwards (from L2) and writes the gradient over Z. LOSS_ROWS[row] = (lse - z[y]) / n."""
    dtype = Z.dtype.element_ty
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    BLOCK: tl.constexpr = SUB * TILE
    sub = tl.arange(0, SUB)
    lane = tl.max_contiguous(tl.multiple_of(tl.arange(0, TILE), TILE), TILE)
    offs = sub[:, None] * TILE + lane[None, :]
    n_tiles = tl.cdiv(n_cols, BLOCK)
    inv_n = 1.0 / tl.load(N_VALID).to(tl.float32)
    for row in tl.range(pid, n_rows, nprog, num_stages=1):      # (the tile loops pipeline)
        z_row = Z + tl.cast(row, tl.int64) * stride_z
        y = tl.load(TARGET + row)
        if y == ignore_index:
            zero = tl.zeros([SUB, TILE], dtype=dtype)
            for b in tl.range(0, n_tiles):
                cols = b * BLOCK + offs
                tl.store(z_row + cols, zero, mask=cols < n_cols, eviction_policy="evict_first")
            tl.store(LOSS_ROWS + row, 0.0)
        else:
            z_y = tl.load(z_row + y).to(tl.float32)            # before pass 2 overwrites it
            m = tl.full([SUB], float("-inf"), tl.float32)
            d = tl.zeros([SUB], dtype=tl.float32)
            # pass 1: online log-sum-exp (the row stays in L2 for pass 2: default policy)
            for b in tl.range(0, n_tiles, num_stages=P1_STAGES):
                cols = b * BLOCK + offs
                z = tl.load(z_row + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
                m_new = tl.maximum(m, tl.max(z, axis=1))
                m_use = tl.where(m_new == float("-inf"), 0.0, m_new) * LOG2E
                d = d * tl.exp2(m * LOG2E - m_use) + tl.sum(tl.exp2(z * LOG2E - m_use[:, None]),
                                                            axis=1)
                m = m_new
            m_r = tl.max(m, axis=0)
            d_r = tl.sum(d * tl.exp2((m - m_r) * LOG2E), axis=0)
            tl.store(LOSS_ROWS + row, (m_r + tl.log(d_r) - z_y) * inv_n)
            m_r2 = m_r * LOG2E
            scale = inv_n / d_r
            # pass 2, last tile first: the tiles pass 1 read last are the likeliest L2 hits
            for b in tl.range(0, n_tiles, num_stages=P2_STAGES):
                cols = (n_tiles - 1 - b) * BLOCK + offs
                mask = cols < n_cols
                z = tl.load(z_row + cols, mask=mask, other=float("-inf"),
                            eviction_policy="evict_first").to(tl.float32)
                g = tl.exp2(z * LOG2E - m_r2) * scale
                g = tl.where(cols == y, g - inv_n, g)
                tl.store(z_row + cols, g.to(dtype), mask=mask, eviction_policy="evict_first")




@triton.jit
def _unpack_bf16x2(v):
    """int32 word holding two bf16 (low half = even column) -> (even, odd) as exact fp32."""
    return (v << 16).to(tl.float32, bitcast=True), (v & -65536).to(tl.float32, bitcast=True)


@triton.jit
def _team_load(Z, TARGET, row, n_rows, stride_z, ignore_index, offs, lo_u, hi_u,
               PAIR: tl.constexpr):
    """(target, this member's chunk of the row, z[target] if the target is in the chunk).
    PAIR = 2: the chunk is loaded as int32 words of two bf16 (-inf pairs off the chunk)."""
    y = tl.load(TARGET + row, mask=row < n_rows, other=ignore_index)
    z_row = Z + tl.cast(row, tl.int64) * stride_z
    ok = y != ignore_index
    mask = lo_u + offs < tl.where(ok, hi_u, lo_u)          # ignored rows read nothing
    if PAIR == 2:
        zw = z_row.to(tl.pointer_type(tl.int32), bitcast=True)
        x = tl.load(zw + (lo_u + offs), mask=mask, other=-8323200)     # 0xFF80FF80
    else:
        x = tl.load(z_row + (lo_u + offs), mask=mask, other=float("-inf"))
    zy = tl.load(z_row + y, mask=(y >= lo_u * PAIR) & (y < hi_u * PAIR) & ok, other=0.0)
    return y, x, zy


@triton.jit
def _team_post(XCH, row, member, x, tag, ok, TEAM_P2: tl.constexpr, PAIR: tl.constexpr):
    """Publish the chunk's log-sum-exp (fp32) as XCH[row, member] = tag | bits(lse_chunk) when
    ok; returns (chunk max m, pe, po) with p = exp(z - m) kept (fp32) for the gradient (for
    PAIR = 1, po is pe)."""
    if PAIR == 2:
        xe, xo = _unpack_bf16x2(x)
        m = tl.max(tl.maximum(xe, xo), axis=0)             # one cross-warp reduction
        m = tl.where(m == float("-inf"), 0.0, m)
        ml = m * LOG2E
        pe = tl.exp2(xe * LOG2E - ml)
        po = tl.exp2(xo * LOG2E - ml)
        s = tl.sum(pe + po, axis=0)
    else:
        xf = x.to(tl.float32)
        m = tl.max(xf, axis=0)
        m = tl.where(m == float("-inf"), 0.0, m)
        pe = tl.exp2(xf * LOG2E - m * LOG2E)
        po = pe
        s = tl.sum(pe, axis=0)
    part = tl.where(s > 0.0, m + tl.log(s), float("-inf"))
    word = tag | (part.to(tl.int32, bitcast=True).to(tl.int64) & 0xFFFFFFFF)
    tl.store(XCH + tl.cast(row, tl.int64) * TEAM_P2 + member, word, mask=ok)
    return m, pe, po


@triton.jit
def _team_grad(Z, row, stride_z, pe, po, m, y, lse, inv_n, offs, lo_u, hi_u,
               PAIR: tl.constexpr, ASM_PACK: tl.constexpr):
    """Write (p exp(m - lse) - [v == y]) / n over this member's chunk of the row, from the kept
    p = exp(z - m): one multiply per element (no second exponential); the one-hot is one
    compare per unit and a select of a per-row constant."""
    dtype = Z.dtype.element_ty
    z_row = Z + tl.cast(row, tl.int64) * stride_z
    scale = tl.exp2((m - lse) * LOG2E) * inv_n
    cu = lo_u + offs
    mask = cu < hi_u
    if PAIR == 2:
        hit = cu == (y >> 1)
        sub_e = tl.where((y & 1) == 0, inv_n, 0.0)
        sub_o = inv_n - sub_e
        ge = pe * scale - tl.where(hit, sub_e, 0.0)
        go = po * scale - tl.where(hit, sub_o, 0.0)
        if ASM_PACK:        # one cvt.rn.bf16x2.f32 per pair (odd column in the high half)
            word = tl.inline_asm_elementwise("cvt.rn.bf16x2.f32 $0, $2, $1;", "=r,f,f",
                                             [ge, go], dtype=tl.int32, is_pure=True, pack=1)
        else:
            word = (ge.to(dtype).to(tl.int16, bitcast=True).to(tl.int32) & 0xFFFF) | \
                (go.to(dtype).to(tl.int16, bitcast=True).to(tl.int32) << 16)
        zw = z_row.to(tl.pointer_type(tl.int32), bitcast=True)
        tl.store(zw + cu, word, mask=mask)
    else:
        g = pe * scale - tl.where(cu == y, inv_n, 0.0)
        tl.store(z_row + cu, g.to(dtype), mask=mask)


@triton.jit(do_not_specialize=["gen"])
def _ce_team_kernel(Z, TARGET, N_VALID, LOSS_ROWS, XCH, n_rows, n_units, stride_z,
                    ignore_index, chunk_u, n_teams, gen, TEAM: tl.constexpr,
                    TEAM_P2: tl.constexpr, BLOCK_U: tl.constexpr, PAIR: tl.constexpr,
                    ASM_PACK: tl.constexpr, POST_ONLY: tl.constexpr):
    """Program pid = team * TEAM + member: rows team, team + n_teams, ...; member's chunk is
    units [member * chunk_u, +chunk_u) of the row (a unit = PAIR columns). Publishes its
    chunk's LSE to XCH[row, member] (tagged gen), keeps p = exp(z - m_chunk), waits for its
    team's words of the row, writes the gradient of its chunk from registers; the target's
    owner writes LOSS_ROWS[row]."""
    pid = tl.program_id(0)
    team = pid // TEAM
    member = pid - team * TEAM
    lo_u = member * chunk_u
    hi_u = tl.minimum(lo_u + chunk_u, n_units)
    offs = tl.max_contiguous(tl.multiple_of(tl.arange(0, BLOCK_U), BLOCK_U), BLOCK_U)
    toffs = tl.arange(0, TEAM_P2)
    tmask = toffs < TEAM
    inv_n = 1.0 / tl.load(N_VALID).to(tl.float32)
    tag = gen.to(tl.int64) << 32

    # prologue: row `team` loaded, reduced and published; row team + n_teams loaded
    y0, x0, zy0 = _team_load(Z, TARGET, team, n_rows, stride_z, ignore_index, offs, lo_u, hi_u,
                             PAIR)
    m0, pe0, po0 = _team_post(XCH, team, member, x0, tag, (y0 != ignore_index) & (team < n_rows),
                              TEAM_P2, PAIR)
    y1, x1, zy1 = _team_load(Z, TARGET, team + n_teams, n_rows, stride_z, ignore_index, offs,
                             lo_u, hi_u, PAIR)
    for row in tl.range(team, n_rows, n_teams, num_stages=1):
        # 1. loads of row + 2 n_teams: in flight during the rest of this iteration
        yn, xn, zyn = _team_load(Z, TARGET, row + 2 * n_teams, n_rows, stride_z, ignore_index,
                                 offs, lo_u, hi_u, PAIR)
        # 2. first poll of row's words (published one iteration ago)
        xrow = XCH + tl.cast(row, tl.int64) * TEAM_P2
        valid0 = y0 != ignore_index
        w = tl.load(xrow + toffs, mask=toffs < tl.where(valid0, TEAM, 0), other=tag,
                    volatile=True)
        # 3. reduce and publish row + n_teams (exp values kept for its gradient)
        m1, pe1, po1 = _team_post(XCH, row + n_teams, member, x1, tag,
                                  (y1 != ignore_index) & (row + n_teams < n_rows), TEAM_P2, PAIR)
        # 4. wait for the team's words of row, merge (fixed order), write row's gradient
        if not POST_ONLY:
            if valid0:
                polls = 0
                while (tl.min(((w >> 32) == gen).to(tl.int32), axis=0) == 0) & (polls < MAX_POLLS):
                    w = tl.load(xrow + toffs, mask=tmask, other=tag, volatile=True)
                    polls += 1
                parts = (w & 0xFFFFFFFF).to(tl.int32).to(tl.float32, bitcast=True)
                parts = tl.where(tmask, parts, float("-inf"))
                pm = tl.max(parts, axis=0)
                lse = pm + tl.log(tl.sum(tl.exp2((parts - pm) * LOG2E), axis=0))
                _team_grad(Z, row, stride_z, pe0, po0, m0, y0, lse, inv_n, offs, lo_u, hi_u,
                           PAIR, ASM_PACK)
                tl.store(LOSS_ROWS + row, (lse - zy0.to(tl.float32)) * inv_n,
                         mask=(y0 >= lo_u * PAIR) & (y0 < hi_u * PAIR))
            else:
                z_row = Z + tl.cast(row, tl.int64) * stride_z
                if PAIR == 2:
                    z_row = z_row.to(tl.pointer_type(tl.int32), bitcast=True)
                tl.store(z_row + (lo_u + offs), tl.zeros([BLOCK_U], dtype=x0.dtype),
                         mask=lo_u + offs < hi_u)
                tl.store(LOSS_ROWS + row, 0.0, mask=member == 0)
        y0 = y1
        m0 = m1
        pe0 = pe1
        po0 = po1
        zy0 = zy1
        y1 = yn
        x1 = xn
        zy1 = zyn


_sm_count = {}
BLOCK_V = 8192               # expert path: column block

TEAM_MIN_V = 8193            # V >= this takes the row-team path (Mistral's 32000 included)
TEAM_MIN_V_INTERPRET = 16384  # interpreter: smoke V = 20011 team path, V = 1000 expert path
TEAM_BLOCK = 8192            # most columns per member (32 per thread at 8 warps)
TEAM_BLOCK_INTERPRET = 4096  # interpreter: V = 20011 -> teams of 5
TEAM_WARPS = 8
TEAM_PER_SM = 2              # programs per SM: 2 x 8 warps x 128 registers = the register file
TEAM_MAXNREG = 128           # pins 128 registers per thread so that 2 programs fit per SM
ROW_SUB, ROW_TILE, ROW_WARPS, ROW_P1_STAGES, ROW_P2_STAGES = 32, 256, 32, 5, 4   # fallback

_xch = {}                    # device -> [exchange buffer (int64, zero-initialised), next gen]
_team_broken = {}            # device -> True once the team kernel failed to compile/launch


def _num_sms(device, cpu_sms=1):
    if device.type != "cuda":
        return cpu_sms
    idx = device.index if device.index is not None else torch.cuda.current_device()
    if idx not in _sm_count:
        _sm_count[idx] = torch.cuda.get_device_properties(idx).multi_processor_count
    return _sm_count[idx]


def _count_valid(target, n_valid, N, ignore_index):
    count_block = max(128, min(4096, triton.next_power_of_2(N)))
    _count_valid_kernel[(1,)](target, n_valid, N, int(ignore_index), BLOCK=count_block,
                              num_warps=8 if count_block >= 2048 else 4)


def _run_expert(logits, target, ignore_index, n_valid, loss_rows, N, V):
    _count_valid_kernel[(1,)](target, n_valid, N, int(ignore_index), BLOCK=1024, num_warps=4)
    block = min(BLOCK_V, triton.next_power_of_2(V))
    num_warps = max(4, min(16, block // 512))
    row_bytes = V * logits.element_size()
    per_sm = 1 if row_bytes > 128 * 1024 else 2          # rows in flight must fit in L2
    grid = (min(N, per_sm * _num_sms(logits.device)),)
    _ce_fwd_bwd_kernel[grid](logits, target, n_valid, loss_rows, N, V, logits.stride(0),
                             int(ignore_index), BLOCK=block,
                             NUM_STAGES=1 if _INTERPRET else 3, num_warps=num_warps)


def _run_rowpass(logits, target, ignore_index, n_valid, loss_rows, N, V):
    """The shipped expert's long-row path (fallback only)."""
    _count_valid(target, n_valid, N, ignore_index)
    grid = (min(N, _num_sms(logits.device, cpu_sms=2)),)
    _ce_rowpass_kernel[grid](logits, target, n_valid, loss_rows, N, V, logits.stride(0),
                             int(ignore_index), SUB=ROW_SUB, TILE=ROW_TILE,
                             P1_STAGES=1 if _INTERPRET else ROW_P1_STAGES,
                             P2_STAGES=1 if _INTERPRET else ROW_P2_STAGES,
                             num_warps=ROW_WARPS)


def _team_shape(V, n_rows, n_slots, block):
    """(TEAM, chunk): among TEAM in [cdiv(V, block), 2 cdiv(V, block)], the one that gives
    each program the fewest rows, cdiv(n_rows, n_slots // TEAM) (ties: the smaller TEAM, i.e.
    the larger chunk: a program's per-row cost is mostly fixed, so fewer, fuller chunks beat
    using every SM); chunk = cdiv(V, TEAM) rounded up to 64 columns (<= block)."""
    t_min = triton.cdiv(V, block)
    team, best = t_min, None
    for t in range(t_min, 2 * t_min + 1):
        if t > n_slots:
            break
        rows_per_program = triton.cdiv(n_rows, n_slots // t)
        if best is None or rows_per_program < best:
            team, best = t, rows_per_program
    chunk = triton.cdiv(triton.cdiv(V, team), 64) * 64
    return team, chunk


def _exchange(device, words):
    key = str(device)
    ent = _xch.get(key)
    if ent is None or ent[0].numel() < words or ent[1] >= 2 ** 31 - 2:
        ent = [torch.zeros((max(words, 1 << 16),), dtype=torch.int64, device=device), 1]
        _xch[key] = ent
    gen = ent[1]
    ent[1] += 1
    return ent[0], gen


def _run_team(logits, target, ignore_index, n_valid, loss_rows, N, V):
    _count_valid(target, n_valid, N, ignore_index)
    block = TEAM_BLOCK_INTERPRET if _INTERPRET else TEAM_BLOCK
    if _INTERPRET:
        team, chunk = _team_shape(V, N, 1, block)
        n_teams = min(N, 2)
    else:
        n_sms = _num_sms(logits.device)
        team, chunk = _team_shape(V, N, TEAM_PER_SM * n_sms, block)
        if team > n_sms:                       # a team must fit on the GPU at once
            return False
        n_teams = min(N, (TEAM_PER_SM * n_sms) // team)
    team_p2 = triton.next_power_of_2(team)
    pair = 2 if (logits.dtype == torch.bfloat16 and V % 2 == 0 and logits.stride(0) % 2 == 0
                 and logits.data_ptr() % 4 == 0) else 1
    xch, gen = _exchange(logits.device, N * team_p2)
    args = (logits, target, n_valid, loss_rows, xch, N, V // pair, logits.stride(0),
            int(ignore_index), chunk // pair, n_teams, gen)
    grid = (n_teams * team,)
    meta = dict(TEAM=team, TEAM_P2=team_p2, BLOCK_U=block // pair, PAIR=pair,
                ASM_PACK=pair == 2 and not _INTERPRET,
                num_warps=4 if _INTERPRET else TEAM_WARPS, num_stages=1)
    if _INTERPRET:          # programs run one after another: publish every partial first
        _ce_team_kernel[grid](*args, POST_ONLY=True, **meta)
    if _INTERPRET:
        _ce_team_kernel[grid](*args, POST_ONLY=False, **meta)
        return True
    try:        # compile errors are raised before anything is launched
        _ce_team_kernel[grid](*args, POST_ONLY=False, maxnreg=TEAM_MAXNREG, **meta)
    except Exception:
        # a Triton that refuses maxnreg: same kernel without the cap (correct, and still
        # deadlock-free if only 1 program per SM fits: teams are consecutive program ids)
        _ce_team_kernel[grid](*args, POST_ONLY=False, **meta)
    return True


def run(logits, target, ignore_index):
    N, V = logits.shape
    assert logits.stride(-1) == 1, "logits must be contiguous in the vocabulary dimension"
    target = target.contiguous()
    n_valid = torch.empty((1,), dtype=torch.int32, device=logits.device)
    loss_rows = torch.empty((N,), dtype=torch.float32, device=logits.device)
    if N == 0:
        return loss_rows.sum()
    team_min = TEAM_MIN_V_INTERPRET if _INTERPRET else TEAM_MIN_V
    if V >= team_min:
        key = str(logits.device)
        if not _team_broken.get(key, False):
            try:
                if _run_team(logits, target, ignore_index, n_valid, loss_rows, N, V):
                    return loss_rows.sum()
            except Exception:          # compile/launch refused (nothing was written yet)
                _team_broken[key] = True
        _run_rowpass(logits, target, ignore_index, n_valid, loss_rows, N, V)
    else:
        _run_expert(logits, target, ignore_index, n_valid, loss_rows, N, V)
    return loss_rows.sum()
