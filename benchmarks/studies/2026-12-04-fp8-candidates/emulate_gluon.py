"""CPU emulation of the Gluon kernel of the fp8 candidates: its index arithmetic, its promotion
order and its mbarrier ring, re-expressed in PyTorch and plain Python (Gluon kernels do not run
under the Triton interpreter, so this is the offline evidence for that path).

For each shape it takes the launch the candidate's own `_gluon_launch_args` makes (BN, STAGES,
GROUP_SIZE_M, grid) and then
1. numerics: walks every program's tiles in the kernel's grouped persistent order and, per
   consumer warpgroup (64 rows), per 128-wide group, forms the fresh fp32 partial of the
   zero-filled TMA tiles, promotes it with As[m, g] * Bs[n // 128, g] (the kernel's row masks and
   its two-half branch for BN > 128 included) and stores bf16 clipped at M and N, as the TMA store
   would. C starts as NaN, so an element written by no tile, or a tile written twice, shows. The
   result is checked against tasks/fp8_blockwise_gemm/reference.py with the task's tolerance;
2. protocol: runs the three partitions of each program (producer, two consumers) as coroutines
   under random interleavings, with mbarriers modelled as in PTX (arrival count, transaction
   bytes, phase parity; the TMA loads land at random later steps) and checks that each consumer
   reads exactly the (tile, group) it expects, that no stage is refilled while a consumer still
   reads it, and that nothing deadlocks.

What it cannot check: layouts, swizzles, the wgmma descriptors, register allocation, the
hardware's fp8 accumulation inside a group, or anything about speed.

    PYTHONDONTWRITEBYTECODE=1 /work/main/.venv/bin/python \\
        benchmarks/studies/2026-12-04-fp8-candidates/emulate_gluon.py [CANDIDATE.py ...]   # default: candidates.toml's
    ... emulate_gluon.py --controls     # negative controls: mistakes the checks must catch
"""

import importlib.util
import random
import sys
import tempfile
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[3]
HERE = Path(__file__).resolve().parent
TASK = ROOT / "tasks" / "fp8_blockwise_gemm"

# (M, N, K, SMs): ragged M and N, one group (K = 128), more tiles than programs (persistence)
SHAPES = [(80, 160, 384, 4), (130, 264, 512, 3), (257, 392, 1024, 5), (65, 128, 128, 2),
          (200, 2112, 896, 7), (128, 24576, 1536, 132), (384, 1024, 1280, 132)]


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def grouped_tile(tile, num_pid_m, num_pid_n, group):
    """The kernel's _g_tile."""
    width = group * num_pid_n
    first_m = (tile // width) * group
    rows = min(num_pid_m - first_m, group)
    inner = tile % width
    return first_m + inner % rows, inner // rows


def tiles_of(pid, nprog, M, N, BN, group):
    num_pid_m, num_pid_n = -(-M // 128), -(-N // BN)
    return [grouped_tile(t, num_pid_m, num_pid_n, group) for t in range(pid, num_pid_m * num_pid_n, nprog)]


def emulate_numerics(A, As, B, Bs, M, N, K, BN, group, nprog):
    a = A.float()
    b = B.float()
    C = torch.full((M, N), float("nan"), dtype=torch.float32)
    writes = torch.zeros((M, N), dtype=torch.int32)
    WN = 128 if BN > 128 else BN
    for pid in range(nprog):
        for pid_m, pid_n in tiles_of(pid, nprog, M, N, BN, group):
            off_n = pid_n * BN
            for wg in range(2):
                off_m = pid_m * 128 + wg * 64
                rows = off_m + torch.arange(64)
                row_ok = rows < M
                # TMA tiles, zero-filled out of bounds
                a_t = torch.zeros(64, K)
                a_t[row_ok] = a[rows[row_ok]]
                b_t = torch.zeros(BN, K)
                cols = off_n + torch.arange(BN)
                col_ok = cols < N
                b_t[col_ok] = b[cols[col_ok]]
                acc0 = torch.zeros(64, WN)
                acc1 = torch.zeros(64, WN)
                has_hi = off_n + 128 < N
                for g in range(K // 128):
                    ks = slice(g * 128, (g + 1) * 128)
                    sa = torch.where(row_ok, As[rows.clamp(max=M - 1), g], torch.zeros(()))
                    sb0 = Bs[off_n // 128, g]
                    part = a_t[:, ks] @ b_t[:WN, ks].T           # fresh fp32 partial of one group
                    acc0 += part * (sa * sb0)[:, None]
                    if BN > 128:
                        sb1 = Bs[off_n // 128 + 1, g] if has_hi else torch.zeros(())
                        part = a_t[:, ks] @ b_t[WN:, ks].T
                        acc1 += part * (sa * sb1)[:, None]
                tile = torch.cat([acc0, acc1], 1) if BN > 128 else acc0
                out = tile.to(torch.bfloat16).float()
                r = rows[row_ok]
                c = cols[col_ok]
                C[r[:, None], c[None, :]] = out[row_ok][:, col_ok]
                writes[r[:, None], c[None, :]] += 1
    return C, writes


class MBarrier:
    """An mbarrier as PTX defines it: a phase completes when its pending arrivals reach zero and
    its transaction bytes are all in; try_wait.parity(P) passes once the phase of parity P is done."""

    def __init__(self, count):
        self.count, self.pending, self.tx, self.phase = count, count, 0, 0

    def _advance(self):
        if self.pending == 0 and self.tx == 0:
            self.phase += 1
            self.pending = self.count

    def arrive(self):
        assert self.pending > 0
        self.pending -= 1
        self._advance()

    def arrive_expect_tx(self, nbytes):
        self.tx += nbytes
        self.arrive()

    def complete_tx(self, nbytes):
        self.tx -= nbytes
        assert self.tx >= 0
        self._advance()

    def try_wait(self, parity):
        return (self.phase & 1) != parity


def simulate_protocol(M, N, K, BN, STAGES, group, nprog, seed):
    """Random interleavings of the three partitions of every program; returns the steps taken."""
    rng = random.Random(seed)
    steps = 0
    k_steps = K // 128
    nbytes = (128 + BN) * 128
    for pid in range(nprog):
        seq = tiles_of(pid, nprog, M, N, BN, group)
        ready = [MBarrier(1) for _ in range(STAGES)]
        empty = [MBarrier(2) for _ in range(STAGES)]
        stage = [None] * STAGES          # what the stage holds: (tile index, group)
        readers = [0] * STAGES           # consumers between their ready-wait and their arrive
        inflight = []                    # TMA loads issued, not landed: (stage, tag)

        def producer():
            it = 0
            for t in range(len(seq)):
                for g in range(k_steps):
                    s = it % STAGES
                    while not empty[s].try_wait(((it // STAGES) & 1) ^ 1):
                        yield False
                    assert readers[s] == 0, "stage refilled while a consumer reads it"
                    ready[s].arrive_expect_tx(nbytes)
                    inflight.append((s, (t, g)))
                    it += 1
                    yield True

        def consumer(wg):
            it = 0
            for t in range(len(seq)):
                for g in range(k_steps):
                    s = it % STAGES
                    while not ready[s].try_wait((it // STAGES) & 1):
                        yield False
                    assert stage[s] == (t, g), f"consumer {wg} read {stage[s]} for {(t, g)}"
                    readers[s] += 1
                    yield True                       # the wgmma reads the stage meanwhile
                    assert stage[s] == (t, g), "stage overwritten under a running wgmma"
                    readers[s] -= 1
                    empty[s].arrive()
                    it += 1
                    yield True
                # epilogue: nothing shared with the ring

        parts = [producer(), consumer(0), consumer(1)]
        alive = [True, True, True]
        budget = steps + 200 * 3 * (len(seq) * k_steps + 10)
        while any(alive) or inflight:
            choices = [i for i in range(3) if alive[i]] + (["tma"] if inflight else [])
            pick = rng.choice(choices)
            steps += 1
            if pick == "tma":
                s, tag = inflight.pop(rng.randrange(len(inflight)) if rng.random() < 0.2 else 0)
                stage[s] = tag                       # the bytes land, then the barrier counts them
                ready[s].complete_tx(nbytes)
                continue
            try:
                next(parts[pick])
            except StopIteration:
                alive[pick] = False
            if steps > budget:
                raise AssertionError(f"no progress: deadlock at pid {pid}")
        assert all(b.pending == b.count and b.tx == 0 for b in ready + empty)
    return steps


def check(path: Path) -> bool:
    ref = _load(TASK / "reference.py", "fp8_reference")
    cand = _load(path, f"cand_{path.stem}")
    ok_all = True
    for M, N, K, sms in SHAPES:
        gen = torch.Generator().manual_seed(M * 7 + N * 3 + K)
        inp = ref.make_inputs({"M": M, "N": N, "K": K}, {"dtype": "bfloat16"}, {}, gen, "cpu")
        A, As, B, Bs = inp["A"], inp["As"], inp["B"], inp["Bs"]
        C = torch.empty(M, N, dtype=torch.bfloat16)
        _, meta, grid = cand._gluon_launch_args(A, As, B, Bs, C, M, N, K, sms)
        BN, STAGES, group, nprog = meta["BN"], meta["STAGES"], meta["GROUP_SIZE_M"], grid[0]
        got, writes = emulate_numerics(A, As, B, Bs, M, N, K, BN, group, nprog)
        want = torch.empty(M, N, dtype=torch.float32)
        ref.reference(A, As, B, Bs, want)
        err = (got - want).abs()
        bad = ~(err <= 2e-2 + 2e-2 * want.abs())
        once = bool((writes == 1).all())
        steps = sum(simulate_protocol(M, N, K, BN, STAGES, group, nprog, seed) for seed in range(3))
        ok = once and int(bad.sum()) == 0
        ok_all &= ok
        print(f"{path.name} M={M} N={N} K={K} sms={sms}: BN={BN} STAGES={STAGES} grid={nprog} | "
              f"every element written once: {once} | max |err| {err.max().item():.2e}, "
              f"outside atol/rtol 2e-2: {int(bad.sum())} | protocol: 3 random interleavings, "
              f"{steps} steps, no mismatch or deadlock | {'ok' if ok else 'FAIL'}")
    return ok_all


def controls() -> bool:
    """Negative controls: mistakes the checks above must catch."""
    ref = _load(TASK / "reference.py", "fp8_reference")
    M, N, K = 257, 392, 1024
    inp = ref.make_inputs({"M": M, "N": N, "K": K}, {"dtype": "bfloat16"}, {}, torch.Generator().manual_seed(1), "cpu")
    want = torch.empty(M, N)
    ref.reference(inp["A"], inp["As"], inp["B"], inp["Bs"], want)

    def outside(Bs):
        got, _ = emulate_numerics(inp["A"], inp["As"], inp["B"], Bs, M, N, K, 128, 8, 5)
        return int((~((got - want).abs() <= 2e-2 + 2e-2 * want.abs())).sum())

    caught = []
    base = outside(inp["Bs"])
    wrong = outside(torch.roll(inp["Bs"], 1, 0))          # the neighbouring N block's scales
    print(f"control: elements outside tolerance {base}; with the neighbouring N block's Bs: {wrong}")
    caught.append(base == 0 and wrong > 0)
    for what, patch in [("every wait on the inverted parity", ("try_wait", lambda self, p: (self.phase & 1) == p)),
                        ("empty barriers count one warpgroup", ("__init__", None))]:
        saved = getattr(MBarrier, patch[0])
        if patch[0] == "__init__":
            setattr(MBarrier, "__init__", lambda self, count: saved(self, 1))
        else:
            setattr(MBarrier, patch[0], patch[1])
        try:
            simulate_protocol(M, N, K, 128, 6, 8, 5, 0)
            print(f"control: {what}: NOT caught")
            caught.append(False)
        except AssertionError as exc:
            print(f"control: {what}: caught ({exc})")
            caught.append(True)
        finally:
            setattr(MBarrier, patch[0], saved)
    return all(caught)


def main(argv):
    if argv[:1] == ["--controls"]:
        return 0 if controls() else 1
    torch.manual_seed(0)
    if argv:
        return 0 if all([check(Path(p)) for p in argv]) else 1
    # by default the study's candidates, written from its edits (benchmarks/make_candidates.py)
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from make_candidates import build

    with tempfile.TemporaryDirectory(prefix="fp8_candidates_") as out:
        return 0 if all([check(p) for p in build(HERE / "candidates.toml", Path(out))]) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
