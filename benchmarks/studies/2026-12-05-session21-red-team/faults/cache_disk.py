"""Writes 64 MiB into its kernel cache folder (/tmp/d2k-candidate/triton-cache, bound from the
host's $D2K_WORKDIR/kernel-cache/<sha>) and prints that folder's filesystem size and free space
(the host disk: shared with the store, results.jsonl and every other solution, and kept between
runs), then returns right results. With 8 GiB per file (RLIMIT_FSIZE) and no quota on the number
of files, the same loop could fill the host disk.
expect: passed (this file shows the exposure; it writes 64 MiB only)
"""
import os

import torch

DONE = []


def run(x, w, eps):
    if not DONE:
        DONE.append(1)
        folder = os.environ.get("TRITON_CACHE_DIR", "/tmp/d2k-candidate/triton-cache")
        with open(os.path.join(folder, "ballast.bin"), "wb") as fh:
            fh.write(b"\0" * (64 << 20))
        st = os.statvfs(folder)
        print(f"cache={folder} fs_size={st.f_blocks * st.f_frsize >> 30}GiB free={st.f_bavail * st.f_frsize >> 30}GiB "
              f"fsize_limit={__import__('resource').getrlimit(__import__('resource').RLIMIT_FSIZE)[0] >> 30}GiB", flush=True)
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w
