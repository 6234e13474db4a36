"""A thread whose target is a C function (no frame of this file): it burns CPU beside the timed calls."""
import hashlib
import threading

import torch

threading.Thread(target=hashlib.pbkdf2_hmac, args=("sha256", b"x", b"y", 3_000_000), daemon=True).start()


def run(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w
