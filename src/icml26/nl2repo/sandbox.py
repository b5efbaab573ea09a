"""Process isolation for agent runs and grading: ``bwrap`` > ``unshare`` > ``none``.

Every backend applies the same ``setrlimit`` limits (address space, processes, file
size, CPU time), a wall-clock deadline with a process-group kill (SIGTERM, 5 s grace,
SIGKILL), a clean environment and a capped capture of stdout/stderr (last 1 MiB). The
namespace backends add: no network (an empty network namespace), a private PID
namespace (background processes die with the run) and a whitelisted, read-only view of the
host file system (:func:`file_view`): the operating system's folders and the Python runtime,
nothing else of the host, only ``rw_paths`` writable, private size-capped ``/tmp`` and
``/dev/shm``, and ``hidden_paths`` covered by empty mounts. As root, each run also gets
cgroups capping its processes and its memory (tmpfs pages included).

References
----------
NL2Repo-Bench (arXiv:2512.12730); our spec §2.5 step 2 and §8. The official harness uses
Docker; bubblewrap / unshare are our Docker-free replacements.
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, Sequence

from .task import Limits

__all__ = ["ProcResult", "Sandbox", "SandboxUnavailable", "BwrapSandbox", "UnshareSandbox",
           "NoSandbox", "make_sandbox", "CAPTURE_BYTES", "kill_process_group", "RunCgroup",
           "process_limit_enforced", "memory_cgroup_available", "SYSTEM_PATHS", "Tail"]

CAPTURE_BYTES = 1 << 20            # keep the last 1 MiB of each stream
GRACE_S = 5.0                      # SIGTERM → SIGKILL grace period
SANDBOX_UID = 1000                 # uid seen inside the namespace backends
# A run that failed is "killed by a limit" only on counters the kernel keeps and the process
# cannot write: its cgroups' pids.max / OOM-kill events, its peak memory (cgroup, or the
# rusage the kernel reports at reaping) at this fraction of ``memory_mb`` or more, or its CPU
# time at the CPU limit. Never on its output text or on a signal it can send itself
# (MemoryError printed, SIGSEGV, SIGXCPU, SIGKILL).
MEMORY_HIT_FRACTION = 0.9


class SandboxUnavailable(RuntimeError):
    """The requested isolation backend cannot run on this machine.

    References
    ----------
    Ding et al., "NL2Repo-Bench: Towards Long-Horizon Repository Generation Evaluation of Coding
    Agents", ICML 2026 (arXiv:2512.12730). A ``RuntimeError``: the machine lacks the isolation its
    harness needs.

    Examples
    --------
    >>> issubclass(SandboxUnavailable, RuntimeError)
    True
    """


@dataclass
class ProcResult:
    """What one sandboxed process did.

    ``returncode`` is the exit status (negative: killed by that signal);
    ``killed_by_limit`` is True when it failed and a kernel-kept counter shows a limit was
    reached (see :data:`MEMORY_HIT_FRACTION`): never from its own output or signals.
    ``cpu_s`` is its CPU time and ``peak_memory_mb`` its peak memory, as the kernel counted
(the cgroup's peak, or the reaped rusage's when it exceeds the harness's own peak RSS, which
the child inherits across ``fork``/``execve``).

    References
    ----------
    Ding et al., "NL2Repo-Bench: Towards Long-Horizon Repository Generation Evaluation of Coding
    Agents", ICML 2026 (arXiv:2512.12730). Follows ``subprocess.CompletedProcess``.

    Examples
    --------
    >>> res = ProcResult(returncode=0, stdout=b"hi", stderr=b"", wall_s=0.01)
    >>> res.ok, res.text()
    (True, 'hi')
    """

    returncode: int | None
    stdout: bytes
    stderr: bytes
    wall_s: float
    timed_out: bool = False
    killed_by_limit: bool = False
    signal: int | None = None
    isolation: str = "none"
    leftover_processes: bool = False
    notes: list = field(default_factory=list)
    peak_memory_mb: float | None = None
    cpu_s: float | None = None

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    def text(self, stream: str = "stdout") -> str:
        return getattr(self, stream).decode("utf-8", errors="replace")


class Sandbox(Protocol):
    """What every backend provides.

    References
    ----------
    Ding et al., "NL2Repo-Bench: Towards Long-Horizon Repository Generation Evaluation of Coding
    Agents", ICML 2026 (arXiv:2512.12730). The isolation its harness needs so graded code cannot
    reach the verdict.

    Examples
    --------
    >>> import warnings
    >>> from icml26.nl2repo import Limits, make_sandbox
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", RuntimeWarning)   # "none" warns: no isolation
    ...     box = make_sandbox("none")
    >>> res = box.run(["/bin/echo", "hi"], cwd="/tmp", env={"PATH": "/usr/bin:/bin"},
    ...               limits=Limits(wall_s=20))
    >>> box.isolation, res.ok, res.text().strip()
    ('none', True, 'hi')
    """

    isolation: str

    def run(self, argv: Sequence[str], *, cwd, env: dict, limits: Limits, rw_paths=(),
            hidden_paths=(), ro_paths=(), stdin: bytes | None = None,
            timeout_s: float | None = None) -> ProcResult: ...


class Tail:
    """Reads a pipe in a thread, keeping only the last ``cap`` bytes."""

    def __init__(self, pipe, cap: int = CAPTURE_BYTES):
        self.buf = bytearray()
        self.cap = cap
        self.pipe = pipe
        self.thread = threading.Thread(target=self._pump, daemon=True)
        self.thread.start()

    def _pump(self):
        try:
            while True:
                chunk = self.pipe.read1(65536) if hasattr(self.pipe, "read1") else self.pipe.read(65536)
                if not chunk:
                    break
                self.buf += chunk
                if len(self.buf) > 2 * self.cap:
                    del self.buf[: len(self.buf) - self.cap]
        except (OSError, ValueError):
            pass

    def value(self) -> bytes:
        self.thread.join(timeout=10)
        return bytes(self.buf[-self.cap:])


CGROUP_ROOT = Path("/sys/fs/cgroup")


class RunCgroup:
    """Per-run cgroup-v1 groups: a process cap and a memory cap that also bind root-owned runs.

    ``RLIMIT_NPROC`` is never enforced for uid 0 (the kernel exempts the initial user) and
    ``RLIMIT_AS`` does not count tmpfs pages, so when the harness runs as root and the
    controllers are writable, every run gets its own ``pids`` group (``pids.max =
    limits.nproc``) and ``memory`` group (``memory.limit_in_bytes = limits.memory_mb``,
    which charges the run's private ``/tmp`` and ``/dev/shm`` pages too). They also let the
    harness find and kill every leftover process of a run.
    """

    def __init__(self, groups: dict):
        self.groups = groups

    @classmethod
    def create(cls, limits: Limits, controllers=("pids", "memory")) -> "RunCgroup | None":
        if os.geteuid() != 0:
            return None
        settings = {"pids": {"pids.max": str(int(limits.nproc))},
                    "memory": {"memory.limit_in_bytes": str(int(limits.memory_mb) << 20)}}
        name = f"nl2repo-{os.getpid()}-{time.monotonic_ns()}"
        groups = {}
        for ctrl in controllers:
            root = CGROUP_ROOT / ctrl
            if not (root / "cgroup.procs").exists():
                continue
            path = root / name
            try:
                path.mkdir()
                for key, value in settings[ctrl].items():
                    (path / key).write_text(value)
                groups[ctrl] = path
            except OSError:
                try:
                    path.rmdir()
                except OSError:
                    pass
        return cls(groups) if groups else None

    @property
    def path(self) -> Path:
        return next(iter(self.groups.values()))

    def enter(self) -> None:  # called in the child before exec
        for path in self.groups.values():
            with open(path / "cgroup.procs", "w") as fh:
                fh.write("0")

    def _read(self, ctrl: str, name: str) -> str:
        try:
            return (self.groups[ctrl] / name).read_text() if ctrl in self.groups else ""
        except OSError:
            return ""

    def hit_limit(self) -> bool:
        """Whether the process cap was reached or the memory cap made the kernel kill."""
        for text, key in ((self._read("pids", "pids.events"), "max"),
                          (self._read("memory", "memory.oom_control"), "oom_kill")):
            for line in text.splitlines():
                k, _, val = line.partition(" ")
                if k == key and val.strip().isdigit() and int(val) > 0:
                    return True
        return False

    def peak_memory_mb(self) -> float | None:
        text = self._read("memory", "memory.max_usage_in_bytes").strip()
        return int(text) / (1 << 20) if text.isdigit() else None

    def pids(self) -> list[int]:
        found = set()
        for ctrl in self.groups:
            found.update(int(x) for x in self._read(ctrl, "cgroup.procs").split() if x.isdigit())
        return sorted(found)

    def destroy(self) -> bool:
        """Kill every process left in the groups and remove them; True if any were left."""
        left = False
        for _ in range(50):
            pids = self.pids()
            if not pids:
                break
            left = True
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.05)
        for path in self.groups.values():
            for _ in range(20):
                try:
                    path.rmdir()
                    break
                except OSError:
                    time.sleep(0.05)
        return left


def process_limit_enforced() -> bool:
    """Whether ``limits.nproc`` binds here: not root (``RLIMIT_NPROC``) or a writable ``pids`` cgroup."""
    if os.geteuid() != 0:
        return True
    probe = RunCgroup.create(Limits(nproc=1), controllers=("pids",))
    if probe is None:
        return False
    probe.destroy()
    return True


def memory_cgroup_available() -> bool:
    """Whether runs get a memory cgroup here (root with a writable cgroup-v1 ``memory`` controller)."""
    probe = RunCgroup.create(Limits(), controllers=("memory",))
    if probe is None:
        return False
    probe.destroy()
    return True


def _rlimit_setter(limits: Limits, cpu_s: float, cgroup: "RunCgroup | None" = None):
    mem = int(limits.memory_mb) << 20
    fsize = int(limits.file_mb) << 20
    nproc = int(limits.nproc)
    cpu = max(1, int(cpu_s))

    def apply():  # runs in the child between fork and exec
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
        resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if cgroup is not None:
            cgroup.enter()
    return apply


def _kill_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def kill_process_group(proc: subprocess.Popen) -> None:
    """SIGTERM the process group, wait the grace period, then SIGKILL it (and its cgroup)."""
    if proc.poll() is None:
        _kill_group(proc, signal.SIGTERM)
        try:
            proc.wait(timeout=GRACE_S)
        except subprocess.TimeoutExpired:
            pass
    _kill_group(proc, signal.SIGKILL)
    proc.wait()
    cgroup = getattr(proc, "nl2repo_cgroup", None)
    if cgroup is not None:
        cgroup.destroy()


def _reap(proc: subprocess.Popen, deadline: float | None):
    """Wait for ``proc`` until ``deadline`` (monotonic; ``None``: forever) and reap it with
    ``wait4``: its ``rusage`` (CPU time, peak RSS of it and the descendants it reaped), or
    ``None`` when the deadline passed first. Sets ``proc.returncode``."""
    delay = 0.001
    while True:
        try:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG if deadline is not None else 0)
        except ChildProcessError:          # reaped elsewhere: as subprocess does, status 0
            if proc.returncode is None:
                proc.returncode = 0
            return resource.struct_rusage((0,) * 16)
        if pid == proc.pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return usage
        if deadline is not None and time.monotonic() >= deadline:
            return None
        time.sleep(delay)
        delay = min(2 * delay, 0.05)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False


# What a sandboxed process sees of the host, read-only: the operating system's folders and the
# Python runtime (prefixes and site-packages). Nothing else of the host exists inside: not
# the project's repository, its .git, other checkouts, home folders, /srv, /opt or /mnt.
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
_NEW_ROOT_CANDIDATES = ("/media", "/srv", "/opt", "/mnt")   # an existing folder to stage the new root


def _within(path: Path, roots) -> bool:
    return any(path == r or r in path.parents for r in roots)


def _symlink_chain(path: Path) -> tuple[list, Path]:
    """The symlinks met while resolving ``path`` (link, target) and the real path it names."""
    links, cur = [], Path("/")
    for part in Path(os.path.abspath(path)).parts[1:]:
        nxt = cur / part
        if nxt.is_symlink():
            links.append((nxt, os.readlink(nxt)))
            cur = Path(os.path.realpath(nxt))
        else:
            cur = nxt
    return links, cur


def _runtime() -> tuple[list, list]:
    """The Python runtime as (symlinks to recreate, real folders to bind read-only).

    The interpreter's prefixes and site-packages folders, resolved; when one is reached
    through a symlink (a virtual environment linked under ``/tmp``, say), the link is
    recreated inside the sandbox too, so both spellings of the path work. The project's own
    source (an editable install's ``src``) is not part of it.
    """
    import site
    import sys

    candidates = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
                  *site.getsitepackages(), os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))]
    if site.ENABLE_USER_SITE and os.path.isdir(site.getusersitepackages()):
        candidates.append(site.getusersitepackages())
    system = [Path(p) for p in SYSTEM_PATHS]
    links, dirs = {}, []
    for cand in candidates:
        if not os.path.isdir(cand):
            continue
        chain, real = _symlink_chain(Path(cand))
        for link, target in chain:
            if not _within(Path(os.path.realpath(link.parent)), system):
                links[link] = target
        if not _within(real, system):
            dirs.append(real)
    dirs = sorted(set(dirs), key=lambda d: len(d.parts))
    outer = [d for d in dirs if not _within(d, [o for o in dirs if o != d])]
    return sorted(links.items(), key=lambda kv: len(kv[0].parts)), outer


def file_view(limits: Limits, rw_paths=(), ro_paths=(), hidden_paths=()) -> list[tuple]:
    """The ordered mount plan of a sandboxed process: ``(op, path[, arg])`` tuples.

    ``op`` is ``ro``/``rw`` (bind), ``symlink``, ``tmpfs`` (size in bytes), ``dev``,
    ``proc``, ``hide_dir`` or ``hide_file``. Order: system folders, ``/tmp``, ``/dev``,
    ``/dev/shm``, ``/proc``, the runtime, then ``ro_paths`` and ``rw_paths`` (parents
    first), then hidden paths, last, so that no bind makes a hidden path reappear. A path
    already visible through a system or runtime folder is not bound again; a hidden path
    that nothing makes visible needs no mount.
    """
    half = max(1, int(limits.tmpfs_mb) // 2) << 20
    plan: list[tuple] = []
    for p in SYSTEM_PATHS:
        if os.path.islink(p):
            plan.append(("symlink", Path(p), os.readlink(p)))
        elif os.path.isdir(p):
            plan.append(("ro", Path(p)))
    plan += [("tmpfs", Path("/tmp"), half), ("dev", Path("/dev")), ("tmpfs", Path("/dev/shm"), half),
             ("proc", Path("/proc"))]
    links, runtime = _runtime()
    plan += [("symlink", link, target) for link, target in links]
    plan += [("ro", d) for d in runtime]
    visible = [Path(p) for p in SYSTEM_PATHS if os.path.isdir(p) and not os.path.islink(p)] + runtime
    binds = [("ro", Path(os.path.abspath(p))) for p in ro_paths]
    binds = [(op, p) for op, p in binds if not _within(Path(os.path.realpath(p)), visible)]
    binds += [("rw", Path(os.path.abspath(p))) for p in rw_paths]
    binds.sort(key=lambda b: len(b[1].parts))
    plan += binds
    shown = visible + [p for _, p in binds]
    hidden = [Path(os.path.abspath(h)) for h in hidden_paths if os.path.lexists(h)]
    dirs = [h for h in hidden if h.is_dir()]
    for h in sorted(hidden, key=lambda q: len(q.parts)):
        if not _within(h, shown) or _within(h, [d for d in dirs if d != h]):
            continue   # invisible anyway, or inside a folder hidden already
        plan.append(("hide_dir" if h.is_dir() else "hide_file", h))
    return plan


class _Base:
    isolation = "none"

    def _wrap(self, argv, cwd, limits, rw_paths, hidden_paths, ro_paths) -> list[str]:
        raise NotImplementedError

    def spawn(self, argv, *, cwd, env, limits, rw_paths=(), hidden_paths=(), ro_paths=(),
              timeout_s=None, stdin=subprocess.PIPE, pass_fds=()) -> subprocess.Popen:
        """Start ``argv`` with stdout/stderr pipes (and a stdin pipe unless told otherwise).

        For the JSON-lines step protocol and the package's worker process. The caller owns
        the process; kill it with :func:`kill_process_group`.
        """
        return self._popen(argv, cwd, env, limits, rw_paths, hidden_paths, ro_paths, timeout_s,
                           stdin, pass_fds)

    def _popen(self, argv, cwd, env, limits, rw_paths, hidden_paths, ro_paths, timeout_s, stdin,
               pass_fds=()):
        timeout = float(limits.wall_s if timeout_s is None else timeout_s)
        full = self._wrap([str(a) for a in argv], Path(cwd), limits, [Path(p) for p in rw_paths],
                          [Path(p) for p in hidden_paths], [Path(p) for p in ro_paths])
        env = {**env, **getattr(self, "_env_extra", {})}
        cgroup = RunCgroup.create(limits)
        proc = subprocess.Popen(
            full, cwd=str(cwd), env={k: str(v) for k, v in env.items()}, stdin=stdin,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
            pass_fds=tuple(pass_fds), preexec_fn=_rlimit_setter(limits, 2 * timeout, cgroup))
        proc.nl2repo_cgroup = cgroup
        return proc

    def run(self, argv, *, cwd, env, limits, rw_paths=(), hidden_paths=(), ro_paths=(),
            stdin=None, timeout_s=None, pass_fds=()) -> ProcResult:
        """Run ``argv`` in ``cwd`` under the limits; never raises for the process's own failures.

        Parameters
        ----------
        argv : list of str
        cwd : path
            Working directory (must be among ``rw_paths`` or readable).
        env : dict
            The complete environment (nothing is inherited).
        limits : Limits
        rw_paths, ro_paths, hidden_paths : paths
            Writable binds, extra read-only binds, paths covered by empty mounts.
        stdin : bytes, optional
        timeout_s : float, optional
            Wall-clock deadline (default ``limits.wall_s``).
        pass_fds : sequence of int
            File descriptors the process inherits (e.g. the write end of a report pipe).
        """
        timeout = float(limits.wall_s if timeout_s is None else timeout_s)
        # Linux keeps a process's peak RSS across execve, so the child's rusage starts at this
        # (the forking) process's peak: only a peak above it is the child's own.
        inherited_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        start = time.monotonic()
        proc = self._popen(argv, cwd, env, limits, rw_paths, hidden_paths, ro_paths, timeout_s,
                           subprocess.PIPE if stdin is not None else subprocess.DEVNULL, pass_fds)
        cgroup = proc.nl2repo_cgroup
        out, err = Tail(proc.stdout), Tail(proc.stderr)
        if stdin is not None:
            try:
                proc.stdin.write(stdin)
                proc.stdin.close()
            except (BrokenPipeError, OSError):
                pass
        timed_out = False
        usage = _reap(proc, start + timeout)
        if usage is None:
            timed_out = True
            _kill_group(proc, signal.SIGTERM)
            usage = _reap(proc, time.monotonic() + GRACE_S)
            if usage is None:
                _kill_group(proc, signal.SIGKILL)
                usage = _reap(proc, None)
        wall = time.monotonic() - start
        # Background processes left in the group (only possible without a PID namespace).
        leftover = _group_alive(proc.pid)
        if leftover:
            _kill_group(proc, signal.SIGKILL)
        limit_hit, peak = False, None
        if cgroup is not None:
            limit_hit = cgroup.hit_limit()
            peak = cgroup.peak_memory_mb()
            leftover = cgroup.destroy() or leftover
        stdout, stderr = out.value(), err.value()
        rc = proc.returncode
        sig = -rc if rc is not None and rc < 0 else (rc - 128 if rc and 128 < rc < 160 else None)
        cpu_s = usage.ru_utime + usage.ru_stime if usage is not None else None
        rss_mb = usage.ru_maxrss / 1024 if usage is not None else None     # KiB on Linux
        if rss_mb is not None and rss_mb <= inherited_mb:
            rss_mb = None              # no larger than what it inherited: not evidence of its own use
        peak = max(p for p in (peak, rss_mb, 0.0) if p is not None)
        by_limit = not timed_out and rc != 0 and (
            limit_hit or peak >= MEMORY_HIT_FRACTION * limits.memory_mb
            or (cpu_s is not None and cpu_s >= max(1, int(2 * timeout))))
        res = ProcResult(rc, stdout, stderr, wall, timed_out, by_limit, sig, self.isolation, leftover)
        res.peak_memory_mb, res.cpu_s = peak, cpu_s
        return res


class NoSandbox(_Base):
    """No isolation: rlimits and the deadline only (a loud warning is emitted)."""

    isolation = "none"

    def __init__(self, warn: bool = True):
        if warn:
            warnings.warn("nl2repo: running agents WITHOUT isolation (sandbox='none'): the agent "
                          "can reach the network, read hidden tests and write anywhere the user "
                          "can; results are marked isolation='none'", RuntimeWarning, stacklevel=3)

    def _wrap(self, argv, cwd, limits, rw_paths, hidden_paths, ro_paths):
        return argv


class BwrapSandbox(_Base):
    """bubblewrap: user, mount, PID, network, IPC, UTS namespaces; a whitelisted, read-only root."""

    isolation = "bwrap"

    def __init__(self):
        self.binary = shutil.which("bwrap")
        if self.binary is None:
            raise SandboxUnavailable("sandbox='bwrap' needs the bubblewrap binary: install the "
                                     "Debian/Ubuntu package 'bubblewrap' (apt-get install bubblewrap)")

    def _wrap(self, argv, cwd, limits, rw_paths, hidden_paths, ro_paths):
        cmd = [self.binary, "--unshare-all", "--unshare-user", "--uid", str(SANDBOX_UID),
               "--gid", str(SANDBOX_UID), "--die-with-parent", "--new-session"]
        if limits.network:
            cmd.append("--share-net")
        for op, path, *arg in file_view(limits, rw_paths, ro_paths, hidden_paths):
            if op in ("ro", "rw"):
                cmd += ["--ro-bind" if op == "ro" else "--bind", str(path), str(path)]
            elif op == "symlink":
                cmd += ["--symlink", str(arg[0]), str(path)]
            elif op == "tmpfs":
                cmd += ["--size", str(arg[0]), "--tmpfs", str(path)]
            elif op == "dev":
                cmd += ["--dev", str(path)]
            elif op == "proc":
                cmd += ["--proc", str(path)]
            elif op == "hide_dir":
                cmd += ["--size", "4096", "--perms", "0555", "--tmpfs", str(path), "--remount-ro", str(path)]
            elif op == "hide_file":
                cmd += ["--ro-bind", "/dev/null", str(path)]
        cmd += ["--remount-ro", "/", "--chdir", str(cwd), "--"]
        return cmd + list(argv)


_UNSHARE_SETUP = r"""
set -e
new="$NL2REPO_NEWROOT"
mount -t tmpfs -o size=4m,mode=755 nl2repo-root "$new"
printf '%s\n' "$NL2REPO_PLAN" | while read -r op path arg; do
  [ -n "$op" ] || continue
  t="$new$path"
  case "$op" in
    ro|rw)
      if [ -d "$path" ]; then mkdir -p "$t"; else mkdir -p "$(dirname "$t")"; [ -e "$t" ] || : > "$t"; fi
      mount --bind "$path" "$t"
      if [ "$op" = ro ]; then
        mount -o remount,bind,ro "$t" 2>/dev/null || mount -o remount,bind,ro,nosuid,nodev "$t"
      fi ;;
    symlink) mkdir -p "$(dirname "$t")"; ln -s "$arg" "$t" ;;
    tmpfs) mkdir -p "$t"; mount -t tmpfs -o "size=$arg,mode=1777" nl2repo-tmp "$t" ;;
    dev)
      mkdir -p "$t"; mount -t tmpfs -o size=64k,mode=755 nl2repo-dev "$t"
      for n in null zero full random urandom tty; do : > "$t/$n"; mount --bind "/dev/$n" "$t/$n"; done
      ln -s /proc/self/fd "$t/fd"; ln -s /proc/self/fd/0 "$t/stdin"
      ln -s /proc/self/fd/1 "$t/stdout"; ln -s /proc/self/fd/2 "$t/stderr" ;;
    proc) mkdir -p "$t"; mount -t proc nl2repo-proc "$t" ;;
    hide_dir) mount -t tmpfs -o ro,size=4k,mode=555 nl2repo-hidden "$t" ;;
    hide_file) mount --bind /dev/null "$t" ;;
    *) echo "nl2repo-sandbox: unknown op $op" >&2; exit 1 ;;
  esac
done
mkdir "$new/.old"
cd "$new"
"$NL2REPO_PIVOT_ROOT" . .old
cd /
umount -l /.old
rmdir /.old
mount -o remount,ro nl2repo-root /
cd "$NL2REPO_CWD"
unset NL2REPO_PLAN NL2REPO_NEWROOT NL2REPO_CWD NL2REPO_PIVOT_ROOT
exec setpriv --bounding-set=-all --inh-caps=-all --no-new-privs -- "$@"
"""


class UnshareSandbox(_Base):
    """util-linux ``unshare``: user, mount, PID, IPC, UTS and network namespaces; a whitelisted root.

    The setup script builds a new root on a tmpfs (system folders and runtime bound
    read-only, then the run's own paths), pivots into it (``pivot_root``) and detaches the host's
    root. Paths must not contain whitespace (they pass through the small shell script).
    """

    isolation = "unshare"

    def __init__(self):
        self.binary = shutil.which("unshare")
        self.setpriv = shutil.which("setpriv")
        self.pivot_root = shutil.which("pivot_root") or next(
            (p for p in ("/usr/sbin/pivot_root", "/sbin/pivot_root") if os.path.exists(p)), None)
        if self.binary is None or self.setpriv is None or self.pivot_root is None:
            raise SandboxUnavailable("sandbox='unshare' needs util-linux's unshare, setpriv and "
                                     "pivot_root (Debian package 'util-linux')")
        self.new_root = next((p for p in _NEW_ROOT_CANDIDATES if os.path.isdir(p)), None)
        if self.new_root is None:
            raise SandboxUnavailable("sandbox='unshare' needs an existing folder to stage its root "
                                     f"(one of {', '.join(_NEW_ROOT_CANDIDATES)})")

    def _wrap(self, argv, cwd, limits, rw_paths, hidden_paths, ro_paths):
        plan = file_view(limits, rw_paths, ro_paths, hidden_paths)
        for _, path, *arg in plan:
            if any(c.isspace() for c in str(path) + "".join(map(str, arg))):
                raise ValueError(f"unshare sandbox: path {path} contains whitespace")
        if any(c.isspace() for c in str(cwd)):
            raise ValueError(f"unshare sandbox: path {cwd} contains whitespace")
        flags = [self.binary, "--user", "--map-root-user", "--mount", "--pid", "--ipc", "--uts",
                 "--fork", "--kill-child", "--propagation", "private"]
        if not limits.network:
            flags.append("--net")
        self._env_extra = {"NL2REPO_PLAN": "\n".join(" ".join(map(str, step)) for step in plan),
                           "NL2REPO_NEWROOT": self.new_root, "NL2REPO_CWD": str(cwd),
                           "NL2REPO_PIVOT_ROOT": self.pivot_root}
        return flags + ["/bin/sh", "-c", _UNSHARE_SETUP, "nl2repo-sandbox", *argv]


def _probe(box) -> bool:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="nl2repo-probe-") as d:
        res = box.run(["/bin/sh", "-c", "echo ok > probe"], cwd=d,
                      env={"PATH": "/usr/bin:/bin"}, limits=Limits(wall_s=20), rw_paths=[d])
        return res.returncode == 0 and (Path(d) / "probe").is_file()


_PROBED: dict[str, bool] = {}


def make_sandbox(kind: str = "auto"):
    """A sandbox backend, probed so that it is known to work here.

    Parameters
    ----------
    kind : {"auto", "bwrap", "unshare", "none"}
        ``auto`` tries bwrap, then unshare, then falls back to ``none`` with a warning.

    Returns
    -------
    Sandbox
        With ``isolation`` telling which backend is in use.

    Raises
    ------
    SandboxUnavailable
        When a named backend cannot run here (the message names the package to install).

    Examples
    --------
    >>> box = make_sandbox("auto")   # doctest: +SKIP
    >>> box.isolation                # doctest: +SKIP
    'bwrap'
    """
    choices = {"auto", "bwrap", "unshare", "none"}
    if kind not in choices:
        raise ValueError(f"sandbox must be one of {sorted(choices)}, got {kind!r}")
    if kind == "none":
        return NoSandbox()
    order = ["bwrap", "unshare"] if kind == "auto" else [kind]
    errors = []
    for name in order:
        cls = BwrapSandbox if name == "bwrap" else UnshareSandbox
        try:
            box = cls()
        except SandboxUnavailable as exc:
            errors.append(str(exc))
            continue
        if name not in _PROBED:
            _PROBED[name] = _probe(box)
        if _PROBED[name]:
            return box
        errors.append(f"{name}: probe failed (user namespaces disabled?)")
    if kind != "auto":
        raise SandboxUnavailable("; ".join(errors))
    warnings.warn("nl2repo: no isolation backend works here (" + "; ".join(errors) +
                  "); falling back to sandbox='none'", RuntimeWarning, stacklevel=2)
    return NoSandbox(warn=True)
