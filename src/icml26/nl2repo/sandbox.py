"""Process isolation for agent runs and grading: ``bwrap`` > ``unshare`` > ``none``.

Every backend applies the same ``setrlimit`` limits (address space, processes, file
size, CPU time), a wall-clock deadline with a process-group kill (SIGTERM, 5 s grace,
SIGKILL), a clean environment and a capped capture of stdout/stderr (last 1 MiB). The
namespace backends add: no network (an empty network namespace), a private PID
namespace (background processes die with the run), a read-only view of the host file
system where only ``rw_paths`` are writable, a private ``/tmp``, and ``hidden_paths``
covered by empty tmpfs mounts.

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
           "NoSandbox", "make_sandbox", "CAPTURE_BYTES", "kill_process_group", "PidsCgroup",
           "process_limit_enforced",
           "Tail"]

CAPTURE_BYTES = 1 << 20            # keep the last 1 MiB of each stream
GRACE_S = 5.0                      # SIGTERM → SIGKILL grace period
SANDBOX_UID = 1000                 # uid seen inside the namespace backends
LIMIT_SIGNALS = {signal.SIGXCPU, signal.SIGXFSZ, signal.SIGSEGV, signal.SIGBUS}
# Signatures of an rlimit hit in a process's own error output. Used only for the failure
# *label* of a run that already ended badly, never for a score.
RESOURCE_MARKERS = (b"MemoryError", b"Cannot allocate memory", b"Resource temporarily unavailable",
                    b"BlockingIOError: [Errno 11]", b"File size limit exceeded",
                    b"CPU time limit exceeded", b"std::bad_alloc")


class SandboxUnavailable(RuntimeError):
    """The requested isolation backend cannot run on this machine."""


@dataclass
class ProcResult:
    """What one sandboxed process did.

    ``returncode`` is the exit status (negative: killed by that signal);
    ``killed_by_limit`` is True when it died of a resource limit (an rlimit signal,
    an rlimit error in its output, or a kill we did not send).
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

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    def text(self, stream: str = "stdout") -> str:
        return getattr(self, stream).decode("utf-8", errors="replace")


class Sandbox(Protocol):
    """What every backend provides."""

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


PIDS_CGROUP_ROOT = Path("/sys/fs/cgroup/pids")


class PidsCgroup:
    """A per-run cgroup-v1 ``pids`` group: a process cap that also binds root-owned runs.

    ``RLIMIT_NPROC`` is never enforced for uid 0 (the kernel exempts the initial user),
    so when the harness runs as root and the ``pids`` controller is writable, every run
    gets its own group with ``pids.max = limits.nproc``. It also lets the harness find
    and kill every leftover process of a run.
    """

    def __init__(self, path: Path):
        self.path = path

    @classmethod
    def create(cls, nproc: int) -> "PidsCgroup | None":
        if os.geteuid() != 0 or not (PIDS_CGROUP_ROOT / "cgroup.procs").exists():
            return None
        try:
            path = PIDS_CGROUP_ROOT / f"nl2repo-{os.getpid()}-{time.monotonic_ns()}"
            path.mkdir()
            (path / "pids.max").write_text(str(int(nproc)))
            return cls(path)
        except OSError:
            return None

    def enter(self) -> None:  # called in the child before exec
        with open(self.path / "cgroup.procs", "w") as fh:
            fh.write("0")

    def hit_limit(self) -> bool:
        try:
            for line in (self.path / "pids.events").read_text().splitlines():
                key, _, val = line.partition(" ")
                if key == "max" and int(val) > 0:
                    return True
        except (OSError, ValueError):
            pass
        return False

    def pids(self) -> list[int]:
        try:
            return [int(x) for x in (self.path / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return []

    def destroy(self) -> bool:
        """Kill every process left in the group and remove it; True if any were left."""
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
        try:
            self.path.rmdir()
        except OSError:
            pass
        return left


def process_limit_enforced() -> bool:
    """Whether ``limits.nproc`` binds here: not root (``RLIMIT_NPROC``) or a writable ``pids`` cgroup."""
    if os.geteuid() != 0:
        return True
    probe = PidsCgroup.create(1)
    if probe is None:
        return False
    probe.destroy()
    return True


def _rlimit_setter(limits: Limits, cpu_s: float, cgroup: "PidsCgroup | None" = None):
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


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False


class _Base:
    isolation = "none"

    def _wrap(self, argv, cwd, limits, rw_paths, hidden_paths, ro_paths) -> list[str]:
        raise NotImplementedError

    def spawn(self, argv, *, cwd, env, limits, rw_paths=(), hidden_paths=(), ro_paths=(),
              timeout_s=None) -> subprocess.Popen:
        """Start ``argv`` with stdin/stdout pipes (for the JSON-lines step protocol).

        The caller owns the process; kill it with :func:`kill_process_group`.
        """
        return self._popen(argv, cwd, env, limits, rw_paths, hidden_paths, ro_paths, timeout_s,
                           subprocess.PIPE)

    def _popen(self, argv, cwd, env, limits, rw_paths, hidden_paths, ro_paths, timeout_s, stdin):
        timeout = float(limits.wall_s if timeout_s is None else timeout_s)
        runtime = _runtime_paths() if self.isolation != "none" else []
        # A read-only path inside a runtime folder is visible already (binding it again
        # fails on symlinks, e.g. a virtual environment's bin/python).
        ro = [Path(p) for p in ro_paths]
        ro = [p for p in ro if not any(r == p or r in p.parents for r in runtime)]
        full = self._wrap([str(a) for a in argv], Path(cwd), limits,
                          [Path(p) for p in rw_paths], [Path(p) for p in hidden_paths], ro)
        env = {**env, **getattr(self, "_env_extra", {})}
        cgroup = PidsCgroup.create(limits.nproc)
        proc = subprocess.Popen(
            full, cwd=str(cwd), env={k: str(v) for k, v in env.items()}, stdin=stdin,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
            preexec_fn=_rlimit_setter(limits, 2 * timeout, cgroup))
        proc.nl2repo_cgroup = cgroup
        return proc

    def run(self, argv, *, cwd, env, limits, rw_paths=(), hidden_paths=(), ro_paths=(),
            stdin=None, timeout_s=None) -> ProcResult:
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
            Writable binds, extra read-only binds, folders replaced by empty tmpfs.
        stdin : bytes, optional
        timeout_s : float, optional
            Wall-clock deadline (default ``limits.wall_s``).
        """
        timeout = float(limits.wall_s if timeout_s is None else timeout_s)
        start = time.monotonic()
        proc = self._popen(argv, cwd, env, limits, rw_paths, hidden_paths, ro_paths, timeout_s,
                           subprocess.PIPE if stdin is not None else subprocess.DEVNULL)
        cgroup = proc.nl2repo_cgroup
        out, err = Tail(proc.stdout), Tail(proc.stderr)
        if stdin is not None:
            try:
                proc.stdin.write(stdin)
                proc.stdin.close()
            except (BrokenPipeError, OSError):
                pass
        timed_out = False
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc, signal.SIGTERM)
            try:
                proc.wait(timeout=GRACE_S)
            except subprocess.TimeoutExpired:
                _kill_group(proc, signal.SIGKILL)
                proc.wait()
        wall = time.monotonic() - start
        # Background processes left in the group (only possible without a PID namespace).
        leftover = _group_alive(proc.pid)
        if leftover:
            _kill_group(proc, signal.SIGKILL)
        nproc_hit = False
        if cgroup is not None:
            nproc_hit = cgroup.hit_limit()
            leftover = cgroup.destroy() or leftover
        stdout, stderr = out.value(), err.value()
        rc = proc.returncode
        sig = -rc if rc is not None and rc < 0 else (rc - 128 if rc and 128 < rc < 160 else None)
        by_limit = False
        if not timed_out:
            if sig is not None and (sig in LIMIT_SIGNALS or sig == signal.SIGKILL):
                by_limit = True
            elif rc not in (0, None) and any(m in stderr[-65536:] for m in RESOURCE_MARKERS):
                by_limit = True
            elif nproc_hit:
                by_limit = True
        return ProcResult(rc, stdout, stderr, wall, timed_out, by_limit, sig, self.isolation,
                          leftover)


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


def _runtime_paths() -> list:
    """Folders the sandboxed Python needs that the private ``/tmp`` would otherwise hide.

    When the interpreter, the virtual environment or icml26's own source (an editable
    install) lives under ``/tmp`` -- as in a CI checkout there -- it is bound back read-only;
    hidden paths are mounted over it afterwards, so nothing hidden reappears.
    """
    import sys

    import icml26

    tmp = Path("/tmp")
    candidates = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix),
                  Path(sys.executable).resolve().parent.parent,
                  Path(icml26.__file__).resolve().parents[1]}
    found = sorted({c.resolve() for c in candidates if c.is_dir() and tmp in c.resolve().parents})
    return [p for p in found if not any(q in p.parents for q in found)]


class BwrapSandbox(_Base):
    """bubblewrap: user, mount, PID, network, IPC, UTS namespaces; read-only root."""

    isolation = "bwrap"

    def __init__(self):
        self.binary = shutil.which("bwrap")
        if self.binary is None:
            raise SandboxUnavailable("sandbox='bwrap' needs the bubblewrap binary: install the "
                                     "Debian/Ubuntu package 'bubblewrap' (apt-get install bubblewrap)")

    def _wrap(self, argv, cwd, limits, rw_paths, hidden_paths, ro_paths):
        cmd = [self.binary, "--unshare-all", "--unshare-user", "--uid", str(SANDBOX_UID),
               "--gid", str(SANDBOX_UID), "--die-with-parent", "--new-session",
               "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
               "--tmpfs", "/dev/shm"]
        for p in _runtime_paths():
            cmd += ["--ro-bind", str(p), str(p)]
        if limits.network:
            cmd.append("--share-net")
        for p in ro_paths:
            cmd += ["--ro-bind", str(p), str(p)]
        for p in rw_paths:
            cmd += ["--bind", str(p), str(p)]
        for h in hidden_paths:  # last: nothing bound above can make a hidden path reappear
            if h.is_dir():
                cmd += ["--tmpfs", str(h)]
            elif h.exists():
                cmd += ["--ro-bind", "/dev/null", str(h)]
        cmd += ["--chdir", str(cwd), "--"]
        return cmd + list(argv)


_UNSHARE_SETUP = r"""
set -e
stage=/mnt
mount -t tmpfs -o size=1m nl2repo-stage "$stage"
i=0
for p in $NL2REPO_SYS $NL2REPO_RO $NL2REPO_RW; do
  i=$((i+1))
  if [ -d "$p" ]; then mkdir -p "$stage/$i"; else : > "$stage/$i"; fi
  mount --bind "$p" "$stage/$i"
done
mount -t tmpfs nl2repo-tmp /tmp
mount -t tmpfs nl2repo-shm /dev/shm 2>/dev/null || true
# Bind back in order: runtime (read-only), extra read-only paths, writable paths; then the
# hidden paths, last, so that nothing bound above makes one reappear.
i=0
for p in $NL2REPO_SYS $NL2REPO_RO $NL2REPO_RW; do
  i=$((i+1))
  if [ -d "$stage/$i" ]; then mkdir -p "$p"; else mkdir -p "$(dirname "$p")"; [ -e "$p" ] || : > "$p"; fi
  mount --bind "$stage/$i" "$p"
done
for p in $NL2REPO_HIDE_DIRS; do mkdir -p "$p"; mount -t tmpfs -o ro,size=1k nl2repo-hidden "$p"; done
for p in $NL2REPO_HIDE_FILES; do
  mkdir -p "$(dirname "$p")"; [ -e "$p" ] || : > "$p"; mount --bind /dev/null "$p"
done
for p in $NL2REPO_SYS $NL2REPO_RO; do mount -o remount,bind,ro "$p"; done
mount -o remount,bind,ro /
cd "$NL2REPO_CWD"
unset NL2REPO_SYS NL2REPO_RW NL2REPO_RO NL2REPO_HIDE_DIRS NL2REPO_HIDE_FILES NL2REPO_CWD
exec setpriv --bounding-set=-all --inh-caps=-all --no-new-privs -- "$@"
"""


class UnshareSandbox(_Base):
    """util-linux ``unshare``: user, mount, PID and network namespaces; read-only root.

    Paths must not contain whitespace (they pass through a small setup shell script).
    """

    isolation = "unshare"

    def __init__(self):
        self.binary = shutil.which("unshare")
        self.setpriv = shutil.which("setpriv")
        if self.binary is None or self.setpriv is None:
            raise SandboxUnavailable("sandbox='unshare' needs util-linux's unshare and setpriv "
                                     "(Debian package 'util-linux')")

    def _wrap(self, argv, cwd, limits, rw_paths, hidden_paths, ro_paths):
        for p in [*rw_paths, *hidden_paths, *ro_paths, cwd]:
            if any(c.isspace() for c in str(p)):
                raise ValueError(f"unshare sandbox: path {p} contains whitespace")
        flags = [self.binary, "--user", "--map-root-user", "--mount", "--pid", "--fork",
                 "--kill-child", "--mount-proc", "--propagation", "private"]
        if not limits.network:
            flags.append("--net")
        # A path inside a hidden folder is hidden already (and its read-only tmpfs could not
        # hold a mount point for it).
        dirs = [h for h in hidden_paths if h.is_dir()]
        hide_dirs = [h for h in dirs if not any(d != h and d in h.parents for d in dirs)]

        def inside(h):
            return any(d in h.parents for d in hide_dirs)

        self._env_extra = {"NL2REPO_RW": " ".join(map(str, rw_paths)),
                           "NL2REPO_HIDE_DIRS": " ".join(map(str, hide_dirs)),
                           "NL2REPO_HIDE_FILES": " ".join(str(h) for h in hidden_paths
                                                          if h.exists() and not h.is_dir()
                                                          and not inside(h)),
                           "NL2REPO_SYS": " ".join(map(str, _runtime_paths())),
                           "NL2REPO_RO": " ".join(map(str, ro_paths)),
                           "NL2REPO_CWD": str(cwd)}
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
