"""Inside its namespaces the candidate can write only its private places (/tmp with its own folder
and kernel cache, /dev/shm, /proc): every other mount is read-only, so a candidate that keeps uid 0
(capabilities dropped, Python unreadable to others) cannot write a root-owned file that is neither
hidden nor bound read-only. Where the filesystem cannot be made read-only, the candidate is not
started and the reason says why."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

import d2k
from d2k.execution import sandbox

PACKAGE_PARENT = Path(d2k.__file__).resolve().parents[1]

needs_namespaces = pytest.mark.skipif(not sandbox.namespaces_available(),
                                      reason="unshare --mount --net --pid is not permitted here: no mount namespace "
                                             "to make read-only")

PROBE = r"""
import json, os, sys
result = {}
def attempt(name, path, mode="a"):
    try:
        with open(path, mode) as fh:
            fh.write("written by the sandbox test\n")
        result[name] = "ok"
    except OSError as exc:
        result[name] = exc.errno
outside = sys.argv[1]
attempt("outside_existing", os.path.join(outside, "results.jsonl"))
attempt("outside_new", os.path.join(outside, "new-file"), "w")
attempt("private", "/tmp/d2k-candidate/written")
attempt("cache", os.path.join(os.environ["TRITON_CACHE_DIR"], "written"))
attempt("tmp", "/tmp/elsewhere")
attempt("shm", "/dev/shm/written")
attempt("dev_null", "/dev/null")
result["uid"] = os.getuid()
print(json.dumps(result))
"""


@pytest.fixture
def outside():
    """A folder outside /tmp that the candidate sees and that no hide or read-only bind covers (the
    plan below is given none): inside the checkout, removed afterwards."""
    folder = PACKAGE_PARENT / f".d2k-decoy-{uuid.uuid4().hex[:12]}"
    folder.mkdir()
    try:
        (folder / "results.jsonl").write_text("decoy\n")
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@needs_namespaces
def test_only_the_private_places_are_writable(tmp_path, outside):
    import errno

    private, cache = tmp_path / "private", tmp_path / "cache"
    private.mkdir()
    cache.mkdir()
    prefix, env, meta = sandbox.plan(private, [], [], "interpreter", {}, cache_dir=cache)
    assert meta["layers"]["read_only_filesystem"] is True
    proc = subprocess.run([*prefix, sys.executable, "-c", PROBE, str(outside)], env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    # (ENOENT where the checkout lies under /tmp: the candidate's /tmp is its own, the folder not in it)
    refused = (errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOENT)
    assert result["outside_existing"] in refused and result["outside_new"] in refused, result
    assert (outside / "results.jsonl").read_text() == "decoy\n" and sorted(p.name for p in outside.iterdir()) == ["results.jsonl"]
    assert {k: result[k] for k in ("private", "cache", "tmp", "shm", "dev_null")} == dict.fromkeys(
        ("private", "cache", "tmp", "shm", "dev_null"), "ok"), result
    # the private folder and the cache are the real ones, bound writable
    assert (private / "written").exists() and (cache / "written").exists()


def _failing_init(tmp_path: Path) -> Path:
    """An init step whose read-only step cannot work: no mount_setattr, and every remount refused."""
    script = tmp_path / "failing_init.py"
    script.write_text(
        "import errno, subprocess, sys\n"
        "from d2k.execution import sandbox\n"
        "def no_syscall(*args, **kwargs):\n"
        "    raise OSError(errno.ENOSYS, 'Function not implemented')\n"
        "real = sandbox._mount\n"
        "def mount(*args):\n"
        "    if args[:1] == ('-o',) and args[1].startswith('remount,bind,ro,'):\n"
        "        raise subprocess.CalledProcessError(32, ['mount', *args], b'', b'mount: permission denied')\n"
        "    real(*args)\n"
        "sandbox._mount_setattr, sandbox._mount = no_syscall, mount\n"
        "sys.exit(sandbox.init(sys.argv[1:]))\n")
    return script


def _with_init(prefix: list[str], script: Path) -> list[str]:
    at = prefix.index("-m")
    assert prefix[at + 1] == "d2k.execution.sandbox"
    return [*prefix[:at], str(script), *prefix[at + 2:]]


@needs_namespaces
def test_a_filesystem_that_stays_writable_stops_the_candidate(tmp_path):
    private = tmp_path / "private"
    private.mkdir()
    prefix, env, _ = sandbox.plan(private, [], [], "interpreter", {})
    # (the command's own /tmp would be private, so it says it ran on stdout, which the test sees)
    proc = subprocess.run([*_with_init(prefix, _failing_init(tmp_path)), sys.executable, "-c",
                           "print('CANDIDATE-RAN')"], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == sandbox.SANDBOX_FAILED
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("d2k sandbox:") and "read-only" in last and "mount_setattr" in last, proc.stderr
    assert "CANDIDATE-RAN" not in proc.stdout


@needs_namespaces
def test_the_reason_says_the_sandbox_failed(tmp_path, monkeypatch):
    """The init step's line reaches the evaluation: the worker's reason for a candidate that died
    before it loaded the solution ends with the candidate's last output line."""
    from d2k.execution.worker import CandidateFailed, CandidateProcess

    script = _failing_init(tmp_path)
    real = sandbox._init_command
    monkeypatch.setattr(sandbox, "_init_command", lambda *a: _with_init(real(*a), script))
    solution = tmp_path / "solution.py"
    solution.write_text("def run(x):\n    return x\n")
    job = {"solution": {"kind": "solution", "path": str(solution), "solution_id": "f" * 24, "entry_point": "run"},
           "task": {"reference_path": str(solution)}, "backend": "interpreter",
           "sandbox": {"enabled": True, "hide": [], "read_only": [], "limits": {}, "arena_bytes": 0}}
    candidate = CandidateProcess(job, tmp_path / "job", 0)
    try:
        with pytest.raises(CandidateFailed) as failed:
            candidate.request({"op": "load", "path": candidate.solution_path, "entry_point": "run",
                               "kind": "solution", "backend": "interpreter"})
    finally:
        candidate.close()
    assert failed.value.status == "crashed"
    assert f"exited with code {sandbox.SANDBOX_FAILED} (d2k sandbox: " in failed.value.reason, failed.value.reason


@needs_namespaces
def test_a_checkout_under_tmp_stays_visible_and_read_only(tmp_path):
    """A clone made under /tmp (its Python and d2k with it) would vanish with the private /tmp: what
    the plan lists read-only under /tmp is carried into it, read-only."""
    checkout = tmp_path / "clone"
    (checkout / "pkg").mkdir(parents=True)
    (checkout / "pkg" / "module.txt").write_text("content\n")
    private = tmp_path / "private"
    private.mkdir()
    prefix, env, _ = sandbox.plan(private, [], [checkout], "interpreter", {})
    probe = ("import os, sys\n"
             "print(open(sys.argv[1] + '/pkg/module.txt').read().strip())\n"
             "try:\n"
             "    open(sys.argv[1] + '/pkg/module.txt', 'a')\n"
             "    print('written')\n"
             "except OSError as exc:\n"
             "    print('refused', exc.errno)\n")
    proc = subprocess.run([*prefix, sys.executable, "-c", probe, str(checkout)], env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    import errno

    assert proc.stdout.split() == ["content", "refused", str(errno.EROFS)], proc.stdout
    assert (checkout / "pkg" / "module.txt").read_text() == "content\n"


@needs_namespaces
@pytest.mark.parametrize("where", ["outside_tmp", "under_tmp"])
def test_mounts_under_a_read_only_path_stay_visible(tmp_path, where):
    """The driver's libraries can be a mount inside the Python prefix (the H200's /usr/local/nvidia
    under /usr): a read-only path must keep the mounts under it, or CUDA vanishes for the candidate.
    The submount is made in a throwaway mount namespace around the sandbox."""
    base = tmp_path if where == "under_tmp" else PACKAGE_PARENT / f".d2k-prefix-{uuid.uuid4().hex[:12]}"
    lib = base / "prefix" / "lib"
    lib.mkdir(parents=True)
    try:
        private = tmp_path / "private"
        private.mkdir()
        prefix, env, _ = sandbox.plan(private, [], [base / "prefix"], "interpreter", {})
        outer = f"mount -t tmpfs tmpfs {lib} && echo driver > {lib}/libcuda.so.1 && exec \"$@\""
        proc = subprocess.run([shutil.which("unshare"), "--mount", "--propagation", "private", "sh", "-c", outer, "sh",
                               *prefix, sys.executable, "-c", "import sys; print(open(sys.argv[1]).read().strip())",
                               str(lib / "libcuda.so.1")], env=env, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0 and proc.stdout.split() == ["driver"], (proc.stdout, proc.stderr)
    finally:
        if where == "outside_tmp":
            shutil.rmtree(base, ignore_errors=True)


def test_the_cuda_probe_tries_the_paths_the_candidate_gets(tmp_path, monkeypatch):
    """The layers are chosen by a CUDA probe; it must run with the Python prefixes the plan adds, or
    it passes where the candidate then fails (session 15: every GPU candidate saw no device)."""
    seen = {}

    def probe(private_dir, hide, read_only, namespaces, drop_user):
        seen["read_only"] = [Path(p) for p in read_only]
        return namespaces, drop_user, []

    monkeypatch.setattr(sandbox, "namespaces_available", lambda: True)
    monkeypatch.setattr(sandbox, "_layers_cuda_allows", probe)
    sandbox.plan(tmp_path, [], [tmp_path], "cuda", {})
    assert {tmp_path, Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()} <= set(seen["read_only"])


def test_a_gpu_hidden_by_the_sandbox_is_blamed_on_the_sandbox():
    """A candidate whose torch sees no device, under a worker that saw one, is the sandbox's fault:
    the reason says so, instead of 'solution failed to import'. Other load failures stay the
    solution's."""
    from d2k.execution.worker import CandidateFailed, load_failure

    meta = {"layers": {"mount_namespace": True, "read_only_filesystem": True, "unprivileged_user": False}}
    hidden = load_failure(CandidateFailed("error", sandbox.NO_CUDA_INSIDE), meta)
    assert hidden.status == "error"
    assert hidden.reason.startswith("the sandbox hid the GPU") and "read_only_filesystem" in hidden.reason
    assert "unprivileged_user" not in hidden.reason and "solution failed" not in hidden.reason
    own = load_failure(CandidateFailed("crashed", "SyntaxError: invalid syntax"), meta)
    assert (own.status, own.reason) == ("crashed", "solution failed to import: SyntaxError: invalid syntax")


KERNEL_PROBE = r"""
import ctypes, json, os
result = {}
def write_back(name, path):
    # writes what is already there: harmless if the sandbox lets it through
    try:
        with open(path) as fh:
            value = fh.read()
        with open(path, "w") as fh:
            fh.write(value)
        result[name] = "ok"
    except OSError as exc:
        result[name] = exc.errno
write_back("domainname", "/proc/sys/kernel/domainname")
write_back("core_pattern", "/proc/sys/kernel/core_pattern")
try:
    with open("/proc/sysrq-trigger", "w") as fh:
        pass  # opening for writing is enough to know; nothing is written
    result["sysrq"] = "ok"
except OSError as exc:
    result["sysrq"] = exc.errno
libc = ctypes.CDLL(None, use_errno=True)
result["shm_id"] = libc.shmget(int(os.environ.get("D2K_TEST_SHM_KEY", "0")), 4096, 0o1000 | 0o600)
print(json.dumps(result))
"""


@needs_namespaces
def test_the_kernels_settings_and_the_hosts_ipc_are_out_of_reach(tmp_path):
    # before: a capless uid 0 wrote the host's /proc/sys (domainname, core_pattern: a pipe there runs
    # a program as the host's root) and left a System V segment that a later evaluation found
    import ctypes
    import errno

    private = tmp_path / "private"
    private.mkdir()
    key = 0x0D2C0000 + (uuid.uuid4().int & 0xFFFF)
    prefix, env, _ = sandbox.plan(private, [], [], "interpreter", {})
    proc = subprocess.run([*prefix, sys.executable, "-c", KERNEL_PROBE], env={**env, "D2K_TEST_SHM_KEY": str(key)},
                          capture_output=True, text=True, timeout=60)
    libc = ctypes.CDLL(None, use_errno=True)
    outside = libc.shmget(key, 0, 0)
    if outside >= 0:
        libc.shmctl(outside, 0, None)  # IPC_RMID: leave nothing behind
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    refused = (errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOENT)
    assert result["domainname"] in refused and result["core_pattern"] in refused and result["sysrq"] in refused, result
    assert result["shm_id"] >= 0 and outside < 0  # made inside, gone with the namespace


HOME_PROBE = r"""
import json, os, sys
home = sys.argv[1]
print(json.dumps({"listing": sorted(os.listdir(home)),
                  "kept": open(os.path.join(home, "python", "lib.py")).read(),
                  "secret": os.path.exists(os.path.join(home, ".npmrc"))}))
"""


@needs_namespaces
def test_a_home_folder_holding_the_python_is_hidden_all_but_the_python(tmp_path, outside):
    # before: a Python installed under the home folder (pyenv in /root) left the whole home visible
    home = outside / "home"
    (home / "python").mkdir(parents=True)
    (home / "python" / "lib.py").write_text("kept\n")
    (home / ".npmrc").write_text("//registry:_authToken=secret\n")
    private = tmp_path / "private"
    private.mkdir()
    prefix, env, _ = sandbox.plan(private, [home], [home / "python"], "interpreter", {})
    proc = subprocess.run([*prefix, sys.executable, "-c", HOME_PROBE, str(home)], env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {"listing": ["python"], "kept": "kept\n", "secret": False}


DEV_PROBE = r"""
import json, os, stat
blocks = []
for folder, dirs, files in os.walk("/dev"):
    for name in files:
        try:
            if stat.S_ISBLK(os.stat(os.path.join(folder, name)).st_mode):
                blocks.append(os.path.join(folder, name))
        except OSError:
            pass
with open("/dev/urandom", "rb") as fh:
    random_ok = len(fh.read(8)) == 8
print(json.dumps({"listing": sorted(os.listdir("/dev")), "blocks": blocks, "random": random_ok}))
"""


@needs_namespaces
def test_dev_holds_no_disk_and_only_the_nodes_a_kernel_needs(tmp_path):
    # before: the host's /dev, where a uid-0 candidate could open a disk's node and read the hidden
    # content raw (refused by this VM's device rules, not by the sandbox: raw_disk_read.py)
    import fnmatch

    private = tmp_path / "private"
    private.mkdir()
    prefix, env, _ = sandbox.plan(private, [], [], "interpreter", {})
    proc = subprocess.run([*prefix, sys.executable, "-c", DEV_PROBE], env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["blocks"] == [] and result["random"] is True
    allowed = [*sandbox.DEV_ALLOWED, *sandbox.DEV_LINKS, "shm"]
    assert all(any(fnmatch.fnmatch(n, p) for p in allowed) for n in result["listing"]), result["listing"]
    assert {"null", "zero", "urandom", "shm", "fd"} <= set(result["listing"])
