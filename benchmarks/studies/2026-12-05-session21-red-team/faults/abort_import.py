"""os.abort() while importing: SIGABRT before run() exists.
expect: crashed/error on both workloads
"""
import os

os.abort()
