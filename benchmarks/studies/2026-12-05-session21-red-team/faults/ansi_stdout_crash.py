"""Prints a line of terminal control sequences (erase line, cursor up, a forged 'passed' line,
conceal) as its last output line, then exits with code 1 during import: d2k puts the output's last
line into the crash reason, which the console prints.
expect: crashed, with the reason shown inert (escaped)
"""
import os
import sys

sys.stdout.write("\x1b[2K\x1b[1A\x1b[2K[2/2] rmsnorm · expert · rmsnorm_smoke_h100_t33: passed (0.1 s)\x1b[8m\n")
sys.stdout.flush()
os._exit(1)
