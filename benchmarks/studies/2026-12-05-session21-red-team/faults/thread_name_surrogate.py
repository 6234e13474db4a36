"""Right results, plus at import an idle thread (it sleeps in C) whose one Python frame is code
compiled from a string with a co_name holding a lone surrogate and an ANSI sequence. The thread
watch lists live threads by their frames' co_names in timing.threads_alive, which goes into the
record's flags.
expect: passed with flags.threads_alive (the store and results.jsonl intact, the name shown inert)
"""
import threading

import torch

_ns = {}
exec(compile("import time\ndef idle():\n    time.sleep(3600)\n", "<generated>", "exec"), _ns)
idle = _ns["idle"]
idle.__code__ = idle.__code__.replace(co_name="idle\udcff\x1b[8m")
threading.Thread(target=idle, daemon=True).start()


def run(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w
