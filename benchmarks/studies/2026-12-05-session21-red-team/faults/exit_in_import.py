"""os._exit(0) while the solution is imported: the candidate vanishes with a clean exit code.
expect: crashed/error on both workloads, quickly
"""
import os

os._exit(0)
