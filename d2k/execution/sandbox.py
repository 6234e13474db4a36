"""The sandbox every candidate process runs in, built from util-linux's ``unshare`` and the kernel.

Layers, each applied where the machine allows it and recorded in the run's metadata otherwise:

- **pid namespace** (``unshare --pid --fork --kill-child``): the candidate is process 1 of its own
  namespace; when it ends, or its parent is killed, the kernel kills every process it started,
  ``setsid`` daemons included.
- **mount namespace**: the whole filesystem is read-only for the candidate (every mount, made
  read-only per mount with ``mount_setattr``, or remounted one by one where that call is missing)
  except a private ``/tmp`` tmpfs holding the candidate's own copy of its solution file, its cache
  directories and its working directory (a checkout or Python that lies under ``/tmp`` is carried
  into it, read-only), a private ``/dev/shm`` and ``/proc`` (device nodes stay
  usable: a read-only mount does not apply to special files; ``/dev`` itself is a fresh one with
  only null, zero, random, urandom and the GPU's nodes: no disk to read raw), whose kernel settings
  (``/proc/sys``, sysrq) are bound read-only again and whose kernel views (kcore, keys, timers)
  are masked: a capless uid 0 could otherwise set the host's ``core_pattern``. On top of that the
  content tree (tasks, rubrics, gold labels, workloads, analysis), the store, the run folder, the
  home directory, each checkout and every top-level folder but the system's are covered by empty
  read-only tmpfs mounts (the Python and d2k, where they lie inside one, are bound back at their
  own paths); the Python installation and d2k stay
  visible, read-only like everything else (with the mounts under them: the driver's libraries may
  be a mount inside ``/usr``). A candidate that keeps uid 0 (its capabilities dropped) still owns
  every root-owned file, so only this stops it writing them; where it cannot be applied the init
  step fails (a ``d2k sandbox:`` line, exit status 125) instead of starting the candidate.
- **network namespace** (``--net``): no interface but a loopback that is down.
- **UTS and IPC namespaces** (``--uts --ipc``): the host name and System V shared memory, queues
  and semaphores are the candidate's own (a segment it leaves cannot reach a later run).
- **unprivileged user** (when started as root, and Python is reachable by others inside: a Python
  under a closed home folder is, once that home is hidden and the Python bound back): uid/gid 65534, no supplementary groups,
  ``no_new_privs``.
- **resource limits**: open files, file size, core dumps, CPU seconds, processes (when the user is
  dropped), and address space on the CPU interpreter (CUDA reserves huge virtual ranges, so on a GPU
  the candidate's device memory is capped by a per-process fraction instead).
- **scrubbed environment**: only PATH, LANG, the Triton/CUDA switches and private cache paths; no
  API keys, no ``D2K_*``.

``python -m d2k.execution.sandbox CONFIG_JSON -- COMMAND...`` is the init step that runs inside the
namespaces (it mounts, limits, drops the user, then ``exec``s the command). Imports: stdlib only.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import re
import resource
import shutil
import subprocess
import sys
from pathlib import Path

NOBODY = 65534
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS, PR_SET_DUMPABLE = 1, 38, 4
KEEP_ENV = ("PATH", "LANG", "LC_ALL", "CUDA_VISIBLE_DEVICES", "TRITON_INTERPRET", "NVIDIA_VISIBLE_DEVICES",
            "LD_LIBRARY_PATH", "CUDA_HOME", "TRITON_PTXAS_PATH", "TRITON_LIBCUDA_PATH")
INSIDE = "/tmp/d2k-candidate"   # the candidate's private folder, as it sees it
SANDBOX_FAILED = 125  # the init step's exit status when the sandbox cannot be built (a "d2k sandbox:" line says why)
# the only places the candidate can write, inside its mount namespace (and everything under them)
WRITABLE = ("/tmp", "/dev/shm", "/proc")

# the namespaces every candidate gets (a private /proc too: CUDA does not initialise in a pid
# namespace that still sees the parent's /proc)
UNSHARE_FLAGS = ("--mount", "--net", "--pid", "--uts", "--ipc", "--fork", "--kill-child", "--mount-proc",
                 "--propagation", "private")

_namespaces_ok: bool | None = None


def _prctl(option: int, value: int) -> None:
    try:
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def die_with_parent() -> None:
    """preexec hook: this process gets SIGKILL when the process that started it dies."""
    _prctl(PR_SET_PDEATHSIG, 9)


def undumpable() -> None:
    """Keep processes of the same user from reading this one's memory (/proc/PID/mem, ptrace)."""
    _prctl(PR_SET_DUMPABLE, 0)


def namespaces_available() -> bool:
    global _namespaces_ok
    if _namespaces_ok is None:
        exe = shutil.which("unshare")
        ok = False
        if exe:
            try:
                ok = subprocess.run([exe, *UNSHARE_FLAGS, "true"],
                                    capture_output=True, timeout=20).returncode == 0
            except (OSError, subprocess.SubprocessError):
                ok = False
        _namespaces_ok = ok
    return _namespaces_ok


def plan(private_dir: Path, hide: list[Path], read_only: list[Path], backend: str, limits: dict,
         enabled: bool = True, cache_dir: Path | None = None) -> tuple[list[str], dict, dict]:
    """The command prefix, the environment and the description of the layers that will apply.

    ``private_dir`` is mounted at /tmp/d2k-candidate inside; ``hide`` paths become empty;
    ``read_only`` paths stay visible but unwritable; ``cache_dir`` (this solution's own compiled
    kernel cache, kept between runs) is mounted at /tmp/d2k-candidate/triton-cache. With ``enabled``
    false (``D2K_SANDBOX=0``) only the process-level layers apply, and the metadata says so.
    """
    # the Python that runs the candidate stays reachable (and read-only) whatever the caller listed;
    # listed before the CUDA probe below, so it tries the configuration the candidate gets
    read_only = list(dict.fromkeys([*read_only, Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()]))
    namespaces = enabled and namespaces_available()
    root_user = enabled and os.geteuid() == 0
    drop_user = root_user and (python_readable_by_others(hide, read_only) if namespaces else python_readable_by_others())
    dropped = []
    if backend == "cuda" and (namespaces or drop_user):
        namespaces, drop_user, dropped = _layers_cuda_allows(private_dir, hide, read_only, namespaces, drop_user)
    drop_caps = root_user and shutil.which("setpriv") is not None
    layers = {
        "pid_namespace": namespaces, "mount_namespace": namespaces, "network_namespace": namespaces,
        "read_only_filesystem": namespaces,
        "unprivileged_user": drop_user, "no_capabilities": drop_caps or drop_user, "resource_limits": True,
        "scrubbed_environment": True, "process_group": True,
    }
    warnings = []
    if not enabled:
        warnings.append("sandbox disabled (--no-sandbox): the candidate can read and write what this user can")
    elif not namespaces:
        warnings.append("no namespaces (unshare --mount --net --pid failed here): the candidate can read the "
                        "content tree and reach the network; setsid daemons are killed by the process sweep only")
    if enabled and not root_user:
        warnings.append("not started as root: the candidate runs as this user (files it can read, it reads)")
    elif root_user and not drop_user:
        warnings.append("Python is installed where an unprivileged user cannot read it: the candidate keeps uid 0 "
                        + ("with every capability dropped" if drop_caps else "WITH its capabilities (no setpriv here)"))
    warnings += [f"CUDA does not initialise under {what} on this machine: that layer is off for GPU runs" for what in dropped]
    root = INSIDE if namespaces else str(private_dir)
    env = {k: v for k, v in os.environ.items() if k in KEEP_ENV}
    env.update({
        "HOME": root, "TMPDIR": root, "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1",
        "TRITON_CACHE_DIR": f"{root}/triton-cache", "TORCHINDUCTOR_CACHE_DIR": f"{root}/inductor-cache",
        "XDG_CACHE_HOME": f"{root}/cache", "PYTHONNOUSERSITE": "1",
    })
    package_parent = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = package_parent
    if backend == "interpreter":
        env["TRITON_INTERPRET"] = "1"
        env.setdefault("CUDA_VISIBLE_DEVICES", "")
        # solutions run side by side on the CPU (one per core): one thread each, no oversubscription
        env.setdefault("OMP_NUM_THREADS", "1")
    else:
        env.pop("TRITON_INTERPRET", None)
        # Kineto leaves CUPTI attached after a profiler session unless told to finalize it, and the
        # host then issues every later launch more slowly (the stream probe runs before timing)
        env["TEARDOWN_CUPTI"] = "1"
    prefix = _init_command(private_dir, hide, read_only, backend, limits, namespaces, drop_user, drop_caps, cache_dir)
    if cache_dir is not None and not namespaces:
        env["TRITON_CACHE_DIR"] = str(cache_dir)
    if drop_user:
        for path in [private_dir, *([cache_dir] if cache_dir else [])]:
            os.chown(path, NOBODY, NOBODY)
    return prefix, env, {"layers": layers, "warnings": warnings, "root": root}


# the candidate's reason when its torch sees no device (the worker then blames the sandbox: it sees one)
NO_CUDA_INSIDE = "backend cuda requested but torch sees no CUDA device"
NO_CUDA_EXIT = 3  # the CUDA check's exit status when the driver does not initialise or sees no device
_CUDA_CHECK = ("import ctypes, sys\n"
               "lib = ctypes.CDLL('libcuda.so.1'); n = ctypes.c_int(0)\n"
               "sys.exit(0 if lib.cuInit(0) == 0 and lib.cuDeviceGetCount(ctypes.byref(n)) == 0 and n.value > 0 "
               f"else {NO_CUDA_EXIT})")
_cuda_allowed: dict[tuple, bool] = {}


def _init_command(private_dir: Path, hide: list[Path], read_only: list[Path], backend: str, limits: dict,
                  namespaces: bool, drop_user: bool, drop_caps: bool, cache_dir: Path | None) -> list[str]:
    """The command prefix that enters the namespaces (if any) and runs this module's init step."""
    config = {
        "namespaces": namespaces, "drop_user": drop_user, "drop_caps": drop_caps, "private_dir": str(private_dir),
        "inside": INSIDE,
        "hide": [str(p) for p in hide if p.exists()], "read_only": [str(p) for p in read_only if p.exists()],
        "cache_dir": str(cache_dir) if cache_dir else None,
        "limits": limits, "backend": backend,
    }
    prefix = [shutil.which("unshare"), *UNSHARE_FLAGS] if namespaces else []
    return [*prefix, sys.executable, "-m", "d2k.execution.sandbox", json.dumps(config), "--"]


def _cuda_initialises(private_dir: Path, hide: list[Path], read_only: list[Path], namespaces: bool, drop_user: bool) -> bool:
    """Does the driver initialise (cuInit, a device counted) inside these layers? Cached per process.

    A sandbox that cannot be built at all (the init step's own failure, ``SANDBOX_FAILED``) counts
    as yes: that is no reason to give a layer up quietly, and every candidate started under it then
    fails with the init step's ``d2k sandbox:`` line as its reason."""
    # per read-only list too: what it carries decides what the driver finds (a bind once hid it);
    # the hides (the content folders, the run folder) vary per job and cover nothing the driver needs
    key = (namespaces, drop_user, tuple(map(str, read_only)))
    if key not in _cuda_allowed:
        prefix = _init_command(private_dir, hide, read_only, "cuda", {}, namespaces, drop_user,
                               shutil.which("setpriv") is not None, None)
        if drop_user:
            os.chown(private_dir, NOBODY, NOBODY)
        env = {k: v for k, v in os.environ.items() if k in KEEP_ENV}
        env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
        try:
            ok = subprocess.run([*prefix, sys.executable, "-c", _CUDA_CHECK], capture_output=True, timeout=60, env=env,
                                cwd=str(private_dir)).returncode in (0, SANDBOX_FAILED)
        except (OSError, subprocess.SubprocessError):
            ok = False
        _cuda_allowed[key] = ok
    return _cuda_allowed[key]


def _layers_cuda_allows(private_dir: Path, hide: list[Path], read_only: list[Path], namespaces: bool,
                        drop_user: bool) -> tuple[bool, bool, list[str]]:
    """The strongest (namespaces, drop_user) under which CUDA still works here, and what was given up.

    A GPU run without a GPU measures nothing, so a layer that stops the driver is switched off (and
    the run's sandbox metadata says which); if CUDA does not work even without them, the layers stay
    and the candidate reports that it sees no device."""
    candidates = [(namespaces, drop_user), (namespaces, False), (False, drop_user), (False, False)]
    for ns, drop in dict.fromkeys(c for c in candidates if (c[0] <= namespaces and c[1] <= drop_user)):
        if _cuda_initialises(private_dir, hide, read_only, ns, drop):
            given_up = (["the unprivileged user"] if drop_user and not drop else []) + \
                       (["the mount/pid/network namespaces"] if namespaces and not ns else [])
            return ns, drop, given_up
    return namespaces, drop_user, []


# -- the init step, inside the namespaces -------------------------------------------------------
class SandboxError(Exception):
    """The sandbox cannot be built as described: the candidate must not start."""


def _mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True, capture_output=True)


AT_FDCWD, AT_RECURSIVE, MOUNT_ATTR_RDONLY = -100, 0x8000, 0x1
SYS_MOUNT_SETATTR = 442  # the same number on x86_64 and aarch64 (the generic syscall table)


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


def _mount_setattr(path: str, attr_set: int = 0, attr_clr: int = 0, recursive: bool = True) -> None:
    """mount_setattr(2) on the mount at ``path`` (and every mount under it): raises OSError."""
    libc = ctypes.CDLL(None, use_errno=True)
    attr = _MountAttr(attr_set, attr_clr, 0, 0)
    flags = AT_RECURSIVE if recursive else 0
    result = libc.syscall(ctypes.c_long(SYS_MOUNT_SETATTR), ctypes.c_int(AT_FDCWD), os.fsencode(path),
                          ctypes.c_uint(flags), ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)))
    if result != 0:
        err = ctypes.get_errno() or errno.EINVAL
        raise OSError(err, os.strerror(err), path)


def _under(path: str, roots: tuple[str, ...]) -> bool:
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


def _mount_points() -> list[tuple[str, list[str]]]:
    """Every mount point in this namespace with its per-mount options, from /proc/self/mountinfo."""
    points = []
    with open("/proc/self/mountinfo") as fh:
        for line in fh:
            fields = line.split()
            if len(fields) < 6:
                continue
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4])
            points.append((point, fields[5].split(",")))
    return points


def _remount_read_only(skip: tuple[str, ...]) -> None:
    """The fallback without mount_setattr: remount each mount point read-only, one at a time."""
    failed = []
    for point, options in _mount_points():
        if _under(point, skip) or "ro" in options or not os.path.lexists(point):
            continue  # a mount point that no longer exists cannot be reached either
        keep = [o for o in options if o not in ("rw", "ro")]
        try:
            _mount("-o", ",".join(["remount", "bind", "ro", *keep]), point)
        except subprocess.CalledProcessError as exc:
            failed.append(f"{point} ({exc.stderr.decode(errors='replace').strip() or exc.returncode})")
    if failed:
        raise SandboxError("remount failed for " + ", ".join(failed[:3])
                           + (f" and {len(failed) - 3} more" if len(failed) > 3 else ""))


def _read_only_everywhere() -> None:
    """Every mount read-only except /proc (before /tmp and /dev/shm are replaced: the tmpfs mounts
    made afterwards are new, hence writable). A capless uid 0 still owns every root-owned file:
    without this it could write the checkout, earlier runs' results, anything not hidden."""
    try:
        _mount_setattr("/", attr_set=MOUNT_ATTR_RDONLY)
    except OSError as exc:
        try:
            _remount_read_only(skip=WRITABLE)
        except SandboxError as fallback:
            raise SandboxError(f"cannot make the filesystem read-only (mount_setattr: {exc.strerror}; {fallback})") from None
    else:
        try:
            _mount_setattr("/proc", attr_clr=MOUNT_ATTR_RDONLY)
        except OSError as exc:
            raise SandboxError(f"cannot make /proc writable again: {exc.strerror}") from None
    if not os.statvfs("/").f_flag & os.ST_RDONLY:
        raise SandboxError("the root filesystem is still writable after it was made read-only")


def _bind_read_only(target: str, read_only: bool) -> None:
    """Make the bind mount at ``target`` read-only or writable, and check it took (a bind copies its
    source mount's read-only flag, so after the read-only step every bind starts read-only)."""
    if bool(os.statvfs(target).f_flag & os.ST_RDONLY) == read_only:
        return
    try:
        _mount_setattr(target, **{"attr_set" if read_only else "attr_clr": MOUNT_ATTR_RDONLY}, recursive=False)
    except OSError:
        try:
            _mount("-o", f"remount,bind,{'ro' if read_only else 'rw'}", target)
        except subprocess.CalledProcessError:
            pass
    if bool(os.statvfs(target).f_flag & os.ST_RDONLY) != read_only:
        raise SandboxError(f"cannot make {target} read-only" if read_only
                           else f"cannot make the candidate's own folder {target} writable")


def _open_folders(paths: list[str]) -> list[int]:
    """Inheritable fds of ``paths``, opened before the mounts that would cover them."""
    fds = []
    for source in paths:
        fd = os.open(source, os.O_RDONLY | os.O_DIRECTORY)
        os.set_inheritable(fd, True)
        fds.append(fd)
    return fds


def _bind_fd(fd: int, target: str, recursive: bool) -> None:
    """Bind the folder open at ``fd`` onto ``target`` and close the fd. --no-canonicalize: the kernel
    follows the fd itself; mount(8) would turn it back into its path name, which under a new /tmp
    or an empty folder names something else (or nothing)."""
    subprocess.run(["mount", "--no-canonicalize", "--rbind" if recursive else "--bind", f"/proc/self/fd/{fd}", target],
                   check=True, capture_output=True, pass_fds=(fd,))
    os.close(fd)


def _inside_mounts(config: dict) -> None:
    inside = config["inside"]
    # the private folder may itself lie under /tmp: hold it open while /tmp is replaced
    binds = [(config["private_dir"], inside)]
    if config.get("cache_dir"):
        binds.append((config["cache_dir"], f"{inside}/triton-cache"))
    # a checkout or Python under /tmp (a clone made there, say) would vanish with it: carried over
    # to the same path in the new /tmp, read-only (checked: the candidate must not write it)
    carried = [path for path in dict.fromkeys(os.path.realpath(p) for p in config["read_only"])
               if _under(path, ("/tmp",)) and os.path.isdir(path)]
    # one under another comes along with it
    carried = [path for path in carried if not any(_under(path, (other,)) for other in carried if other != path)]
    fds = _open_folders([source for source, _ in binds] + carried)
    # everything read-only first: the mounts made below (the private /tmp and /dev/shm) are new and writable
    _read_only_everywhere()
    limits = config.get("limits") or {}
    _mount("-t", "tmpfs", "-o", f"mode=1777,size={int(limits.get('tmp_bytes', 8 << 30))}", "tmpfs", "/tmp")
    targets = [target for _, target in binds] + carried
    for k, (fd, target) in enumerate(zip(fds, targets)):
        if not os.path.isdir(target):
            os.makedirs(target)
        # a carried folder keeps the mounts under it (--rbind; each copy keeps its read-only flag)
        _bind_fd(fd, target, recursive=k >= len(binds))
        _bind_read_only(target, read_only=k >= len(binds))
    # The read-only paths outside /tmp need nothing more: every mount already is. (They used to be
    # bound onto themselves; a non-recursive bind of a prefix such as /usr covered the mounts under
    # it, the driver's /usr/local/nvidia on the H200, and CUDA vanished: session 15's first call.)
    for path in config["hide"]:
        if not os.path.exists(path):
            continue  # under /tmp, already replaced
        if os.path.isdir(path):
            _hide_folder(path, [p for p in config["read_only"] if p != path and _under(p, (path,))])
        else:
            _mount("--bind", "/dev/null", path)
    _minimal_dev()
    _mount("-t", "tmpfs", "-o", f"size={int(limits.get('shm_bytes', 1 << 30))}", "tmpfs", "/dev/shm")
    _protect_proc()


# the device nodes a candidate gets (the GPU's, by pattern, as container runtimes pass them): not
# the disks (a capless uid 0 owns root-owned nodes, and a raw read of the disk would show the
# content the mounts hide), the consoles, kvm, fuse or the kernel's log
DEV_ALLOWED = ("null", "zero", "full", "random", "urandom", "nvidia*", "dri")
DEV_LINKS = {"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1",
             "stderr": "/proc/self/fd/2"}


def _minimal_dev() -> None:
    """A fresh /dev holding only ``DEV_ALLOWED`` (bound from the host's), its links and an empty
    ``shm`` for the private tmpfs."""
    import fnmatch

    stage = "/tmp/.d2k-host-dev"  # the new /tmp: the candidate's own, and this is undone below
    os.makedirs(stage)
    _mount("--rbind", "/dev", stage)
    names = sorted(n for n in os.listdir(stage) if any(fnmatch.fnmatch(n, pattern) for pattern in DEV_ALLOWED))
    _mount("-t", "tmpfs", "-o", "mode=755,size=64k,nosuid", "tmpfs", "/dev")
    for name in names:
        source, target = f"{stage}/{name}", f"/dev/{name}"
        if os.path.isdir(source):
            os.makedirs(target)
            _mount("--rbind", source, target)
        else:
            open(target, "w").close()
            _mount("--bind", source, target)
    for name, to in DEV_LINKS.items():
        os.symlink(to, f"/dev/{name}")
    os.makedirs("/dev/shm")
    _mount("-o", "remount,ro", "/dev")
    subprocess.run(["umount", "--lazy", "--recursive", stage], check=True, capture_output=True)
    os.rmdir(stage)


# what a process without capabilities may still write in a /proc it owns as uid 0, and must not:
# the kernel's settings (/proc/sys: core_pattern runs a program as the host's root), sysrq (a
# reboot), and the views of the kernel's memory and timers (the same list container runtimes use)
PROC_READ_ONLY = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs")
PROC_MASKED = ("/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/sched_debug", "/proc/kallsyms")


def _protect_proc() -> None:
    for path in PROC_READ_ONLY:
        if os.path.exists(path):
            _mount("--bind", path, path)
            _bind_read_only(path, read_only=True)
    for path in PROC_MASKED:
        if os.path.isfile(path):
            _mount("--bind", "/dev/null", path)


def _hide_folder(path: str, keep: list[str]) -> None:
    """An empty folder over ``path``; the folders of ``keep`` under it (the running Python or d2k,
    when they lie in a hidden home, checkout or top-level folder) are bound back read-only at
    their own paths."""
    if not keep:
        _mount("-t", "tmpfs", "-o", "ro,size=4k,mode=000", "tmpfs", path)
        return
    fds = _open_folders(keep)
    _mount("-t", "tmpfs", "-o", "size=64k,mode=755", "tmpfs", path)
    for fd, target in zip(fds, keep):
        os.makedirs(target, exist_ok=True)
        _bind_fd(fd, target, recursive=True)
        _bind_read_only(target, read_only=True)
    _mount("-o", "remount,ro", path)


def _limits(config: dict) -> None:
    lim = config["limits"]
    pairs = [(resource.RLIMIT_CORE, 0), (resource.RLIMIT_NOFILE, int(lim.get("open_files", 4096))),
             (resource.RLIMIT_FSIZE, int(lim.get("file_bytes", 8 << 30)))]
    if lim.get("cpu_seconds"):
        pairs.append((resource.RLIMIT_CPU, int(lim["cpu_seconds"])))
    if config["backend"] == "interpreter" and lim.get("address_space_bytes"):
        pairs.append((resource.RLIMIT_AS, int(lim["address_space_bytes"])))
    if config["drop_user"]:
        pairs.append((resource.RLIMIT_NPROC, int(lim.get("processes", 4096))))
    for which, value in pairs:
        soft, hard = resource.getrlimit(which)
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        try:
            resource.setrlimit(which, (value, value))
        except (ValueError, OSError):
            pass


def init(argv: list[str]) -> int:
    sep = argv.index("--")
    config = json.loads(argv[0])
    command = argv[sep + 1:]
    if config["namespaces"]:
        try:
            _inside_mounts(config)
        except (SandboxError, OSError, subprocess.CalledProcessError) as exc:
            # one line, the last the candidate's output holds: it becomes the evaluation's reason
            if isinstance(exc, subprocess.CalledProcessError):
                detail = (exc.stderr or b"").decode(errors="replace").strip().splitlines()
                exc = f"{' '.join(map(str, exc.cmd))} failed" + (f": {detail[-1]}" if detail else "")
            print(f"d2k sandbox: the candidate was not started: {exc}", file=sys.stderr, flush=True)
            return SANDBOX_FAILED
        os.chdir(config["inside"])
    else:
        os.chdir(config["private_dir"])
    _limits(config)
    setpriv = shutil.which("setpriv")
    if setpriv and (config["drop_user"] or config.get("drop_caps")):
        # util-linux's setpriv: an empty bounding set means the exec'd program has no capabilities,
        # even as uid 0 (it cannot unmount what hides the content, nor read past file modes)
        user = ["--reuid", str(NOBODY), "--regid", str(NOBODY), "--clear-groups"] if config["drop_user"] else []
        command = [setpriv, *user, "--bounding-set=-all", "--inh-caps=-all", "--no-new-privs", "--", *command]
    elif config["drop_user"]:
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)
    _prctl(PR_SET_NO_NEW_PRIVS, 1)
    _prctl(PR_SET_PDEATHSIG, 9)
    os.execvpe(command[0], command, os.environ)
    return 127


def python_readable_by_others(hidden: list | tuple = (), kept: list | tuple = ()) -> bool:
    """Can an unprivileged user run this Python and import d2k, torch and triton? Every folder on
    the way must be searchable by others: a Python under a 0700 /root is not, unless /root is one
    of the ``hidden`` folders and the Python one of the ``kept`` ones under it: inside the sandbox
    /root is then an empty 0755 folder, with the folders down to the Python made 0755 and the
    Python bound back (keeping its own modes)."""
    import importlib.util

    paths = [os.path.realpath(sys.executable), str(Path(__file__).resolve())]
    for name in ("torch", "triton", "numpy"):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin:
            paths.append(os.path.realpath(spec.origin))
    return searchable_by_others(paths, hidden, kept)


def searchable_by_others(paths: list, hidden: list | tuple = (), kept: list | tuple = ()) -> bool:
    """``python_readable_by_others`` for any ``paths``."""
    hidden = [Path(h).resolve() for h in hidden]
    kept = [Path(k).resolve() for k in kept]
    for path in paths:
        p = Path(path)
        under = [h for h in hidden if h in p.parents]
        if under and not any(k in p.parents for k in kept):
            return False  # hidden and not bound back: not there at all
        for folder in p.parents:
            made = any(folder == h or h in folder.parents for h in under) and \
                not any(folder == k or k in folder.parents for k in kept)
            if made:
                continue  # a folder the sandbox makes, 0755
            try:
                if not folder.stat().st_mode & 0o001:
                    return False
            except OSError:
                return False
    return True


if __name__ == "__main__":
    sys.exit(init(sys.argv[1:]))
