"""Rewrites the timing reply in transit, outside the candidate's Python: no name is replaced, no
thread is started, no hook is installed and no frame is touched, so nothing the guard, the thread
watch or the hook watch looks at changes. At import the solution forks a relay process (a child in
the sandbox's pid namespace, not a thread) and moves the reply pipe under the harness: it dup2()s a
pipe of its own onto the reply descriptor number the candidate was started with (sys.argv), keeping
a duplicate of the real one for the relay. The harness then writes every frame, checks passed, into
the relay, which forwards each one unchanged except the final timing reply, whose per-call times it
divides by 20 (re-encoding the header). The check in Candidate.reply() looks for the solution's code
on the sender's stack: the harness sends its own frames, so it finds none. Computes the right result
on every call.
expect: failed
reason: TODO
"""
import json
import os
import sys

import torch


def _read_exact(fd, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            raise EOFError
        buf += chunk
    return bytes(buf)


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _relay(src, dst):
    try:
        while True:
            n = int.from_bytes(_read_exact(src, 4), "big")
            raw = _read_exact(src, n)
            header = json.loads(raw)
            timing = header.get("timing")
            if isinstance(timing, dict) and isinstance(timing.get("samples_ms"), list):
                timing["samples_ms"] = [v / 20 for v in timing["samples_ms"]]
                raw = json.dumps(header, separators=(",", ":")).encode()
            body = b"" if "arena" in header else _read_exact(src, sum(header.get("blobs", [])))
            _write_all(dst, len(raw).to_bytes(4, "big") + raw + body)
    except BaseException:
        pass
    os._exit(0)


def _install():
    if not sys.argv[0].endswith("candidate.py") or len(sys.argv) < 3:
        return False
    reply_fd = int(sys.argv[2])
    real = os.dup(reply_fd)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(w)
        os.close(reply_fd)
        _relay(r, real)
    os.close(r)
    os.close(real)
    os.dup2(w, reply_fd)
    os.close(w)
    return True


_INSTALLED = _install()


def run(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w
