"""A candidate process that outlives its run: run() sleeps past the per-workload limit. The
supervisor then SIGKILLs the trusted worker's process group (supervisor.py _kill), so the worker
never closes its candidate; the candidate is pid 1 of its own pid namespace, in another process
group, and `unshare --kill-child`'s parent-death signal does not reach it (it was dropped when the
sandbox changed the process's credentials), so it stays alive on the host, reparented to init,
holding its arena and pipes, after d2k has exited. (Here it only sleeps, with a marker argument so
the test can find and kill it; it could equally spin on a core and slow every later evaluation's
timing.)
expect: failed
reason: TODO
"""
import time

MARKER = "redteam_c_outlive_marker"


def run(x, w, eps):
    time.sleep(900)
