"""Raises an exception (and prints a last line) made of terminal control sequences: erase the
line, move the cursor up, write a forged 'passed' progress line and the summary, turn the
terminal's echo colour invisible. The harness should show the reason inert (escaped), not let
it drive the user's terminal.
expect: error (reason shown without live escape sequences)
"""
import sys

import torch

SPOOF = ("\x1b[2K\r\x1b[1A\x1b[2K\r[1/2] rmsnorm · expert · rmsnorm_smoke_h256_t16: passed (0.1 s)\n"
         "\x1b]0;d2k: all passed\x07\x1b[8m")


def run(x, w, eps):
    print(SPOOF, file=sys.stderr, flush=True)
    raise ValueError(SPOOF)
