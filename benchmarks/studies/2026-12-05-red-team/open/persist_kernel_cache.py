"""Files that outlive the run: the per-solution Triton cache is the host folder
<workdir>/kernel-cache/<sha256 of the solution>, bound read-write at /tmp/d2k-candidate/triton-cache
and kept between runs. The solution writes a file of its own there (a counter, here; it could be
any state, or gigabytes: only the 8 GiB per-file limit applies, no quota) and reads it back in the
next evaluation of the same file, which sees what the earlier one left. The error reason shows the
counter growing from one eval to the next, and the file is on the host afterwards.
expect: failed
reason: TODO
"""
import os

PATH = os.path.join(os.environ.get("TRITON_CACHE_DIR", "/tmp/d2k-candidate/triton-cache"), "left_by_solution.txt")


def run(x, w, eps):
    try:
        with open(PATH) as fh:
            n = int(fh.read() or 0)
    except (OSError, ValueError):
        n = 0
    with open(PATH, "w") as fh:
        fh.write(str(n + 1))
    raise RuntimeError(f"PERSIST {PATH}: earlier evaluations left counter {n}")
