"""Checks a gdn_chunk_prefill candidate against the task's reference under the Triton CPU
interpreter on ragged sequence sets, empty sequences included (the device-built chunk table's
edge cases: slots past the last chunk, sequences with no chunk, a last sequence that is empty).

    TRITON_INTERPRET=1 python3 interp_check.py /tmp/gdnsf/gdn_chunk_prefill/syncfree.py ...
"""
import importlib.util
import os
import sys
from pathlib import Path

import torch

assert os.environ.get("TRITON_INTERPRET") == "1", "run under TRITON_INTERPRET=1"
ROOT = Path(__file__).resolve().parents[3]


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ref = load(ROOT / "tasks/gdn_chunk_prefill/reference.py", "gdn_reference")
# (seq_lens, Hqk, Hv, K, V, init_state)
CASES = [([20, 70], 1, 2, 32, 32, True), ([64], 1, 1, 32, 32, False), ([1], 1, 2, 32, 32, True),
         ([64, 0, 130], 1, 2, 32, 32, True), ([0, 70], 2, 4, 32, 32, True), ([70, 0], 1, 2, 32, 32, True),
         ([200, 3, 65, 1], 1, 2, 32, 32, True), ([129], 1, 2, 128, 32, False), ([0], 1, 2, 32, 32, True)]


def main(paths):
    worst = 0
    for path in paths:
        cand = load(path, Path(path).stem)
        for i, (lens, hqk, hv, k, v, init) in enumerate(CASES):
            axes = {"T": sum(lens), "N": len(lens), "Hqk": hqk, "Hv": hv, "K": k, "V": v}
            gen = torch.Generator().manual_seed(100 + i)
            x = ref.make_inputs(axes, {"dtype": torch.float16}, {"seq_lens": lens, "init_state": init}, gen, "cpu")
            scale = k ** -0.5
            o_ref, s_ref = ref.reference(**x, scale=scale)
            o, s = cand.run(**{n: t.clone() for n, t in x.items()}, scale=scale)
            eo = (o.float() - o_ref.float()).abs().max().item() if o.numel() else 0.0
            es = (s - s_ref).abs().max().item()
            ok = eo <= 2e-2 and es <= 0.1     # the task's max_abs_error caps
            worst += not ok
            print(f"{Path(path).stem:24s} lens={lens} Hqk={hqk} Hv={hv} K={k} V={v}: "
                  f"o err {eo:.2e}, state err {es:.2e} {'ok' if ok else 'FAIL'}", flush=True)
    return 1 if worst else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
