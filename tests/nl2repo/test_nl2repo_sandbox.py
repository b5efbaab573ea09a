"""The sandbox enforces what it claims: no network, hidden paths, no writes outside, limits."""

import shutil
import sys
import time
from pathlib import Path

import pytest

from icml26.nl2repo import Limits, SandboxUnavailable, make_sandbox
from icml26.nl2repo.sandbox import (CAPTURE_BYTES, BwrapSandbox, UnshareSandbox,
                                    process_limit_enforced)

PY = sys.executable


@pytest.fixture
def dirs(tmp_path):
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    hidden = ws / "hidden"                 # inside a writable bind: visible unless hidden
    for d in (ws, outside, hidden):
        d.mkdir()
    (hidden / "secret_test.py").write_text("SECRET = 42\n")
    return ws, outside, hidden


def _py(box, code, ws, hidden=(), limits=None, timeout_s=None):
    return box.run([PY, "-I", "-c", code], cwd=ws, env={"PATH": "/usr/bin:/bin", "HOME": str(ws)},
                   limits=limits or Limits(wall_s=30), rw_paths=[ws], hidden_paths=list(hidden),
                   timeout_s=timeout_s)


def test_no_network(box, dirs):
    ws, _, _ = dirs
    res = _py(box, "import socket\ns = socket.socket(); s.settimeout(3)\n"
                   "print(s.connect_ex(('1.1.1.1', 80)))", ws)
    assert res.returncode == 0 and res.text().strip() != "0"


def test_hidden_paths_are_empty(box, dirs):
    ws, _, hidden = dirs
    res = _py(box, f"import os; print(os.listdir({str(hidden)!r}))", ws, hidden=[hidden])
    assert res.text().strip() == "[]"
    assert (hidden / "secret_test.py").is_file()   # still there outside the sandbox


def test_host_outside_the_view_does_not_exist(box, dirs):
    """Only system folders, the runtime and the run's own paths exist: no repository, no .git."""
    import icml26

    ws, outside, _ = dirs
    package = Path(icml26.__file__).resolve().parent
    probes = [outside, package, package.parents[1] / ".git", Path("/root/.bash_history"), Path("/srv"),
              Path("/home")]
    res = _py(box, f"import os\nprint([os.path.exists(p) for p in {[str(p) for p in probes]!r}])", ws)
    assert res.returncode == 0, res.text("stderr")
    assert res.text().strip() == str([False] * len(probes))


def test_tmpfs_is_capped(box, dirs):
    ws, _, _ = dirs
    res = _py(box, "import os\nfor d in ('/tmp', '/dev/shm'):\n    st = os.statvfs(d)\n"
                   "    print(st.f_blocks * st.f_frsize >> 20)", ws, limits=Limits(wall_s=30, tmpfs_mb=64))
    assert res.text().split() == ["32", "32"]


_FILL_TMPFS = ("import os\nblock = b'0' * (8 << 20)\nfor i in range(64):\n"
               "    with open(('/tmp', '/dev/shm')[i % 2] + f'/f{i}', 'wb') as fh:\n"
               "        fh.write(block)\nprint('filled')")


def test_full_tmpfs_refuses_writes(box, dirs):
    """512 MiB into a 2 × 32 MiB tmpfs: refused (ENOSPC). The process then fails on its own;
    its "No space left on device" text is not taken as a limit kill (labels never come from
    text the process writes)."""
    ws, _, _ = dirs
    res = _py(box, _FILL_TMPFS, ws, limits=Limits(wall_s=30, tmpfs_mb=64))
    assert "filled" not in res.text() and "No space left on device" in res.text("stderr")
    assert res.returncode != 0 and not res.killed_by_limit


@pytest.mark.parametrize("code", [
    "import sys\nsys.stderr.write('Traceback\\nMemoryError\\n')\nsys.exit(1)",
    "import ctypes\nctypes.string_at(0)",
    "import sys\nsys.stderr.write('BlockingIOError: [Errno 11] Resource temporarily unavailable\\n')\n"
    "import os\nos._exit(137)",
    "raise MemoryError"])
def test_self_inflicted_deaths_are_not_limit_kills(box, dirs, code):
    """A fake MemoryError, a segfault, an exit status that reads like SIGKILL: the process
    failed, but no kernel counter shows a limit, so it is not labelled a limit kill."""
    ws, _, _ = dirs
    res = _py(box, code, ws, limits=Limits(wall_s=30))
    assert res.returncode != 0 and not res.killed_by_limit, (res.returncode, res.peak_memory_mb)


def test_tmpfs_pages_count_against_the_memory_limit(box, dirs):
    """With a memory cgroup, 512 MiB of tmpfs under a 300 MiB limit is killed before ENOSPC."""
    from icml26.nl2repo.sandbox import memory_cgroup_available

    if not memory_cgroup_available():
        pytest.skip("no writable memory cgroup here (not root): tmpfs is capped by size only")
    ws, _, _ = dirs
    res = _py(box, _FILL_TMPFS, ws, limits=Limits(wall_s=30, memory_mb=300, tmpfs_mb=300))
    assert "filled" not in res.text() and res.killed_by_limit
    assert "No space left on device" not in res.text("stderr")      # the cgroup, not the size cap
    assert res.peak_memory_mb is not None and res.peak_memory_mb >= 250


def test_inherited_fd_reaches_the_process(box, dirs):
    import os

    ws, _, _ = dirs
    r, w = os.pipe()
    try:
        res = box.run([PY, "-I", "-c", f"import os; os.write({w}, b'sent')"], cwd=ws,
                      env={"PATH": "/usr/bin:/bin"}, limits=Limits(wall_s=30), rw_paths=[ws],
                      pass_fds=[w])
        os.close(w)
        assert res.returncode == 0 and os.read(r, 100) == b"sent"
    finally:
        os.close(r)


def test_cannot_write_outside_workspace(box, dirs):
    ws, outside, _ = dirs
    code = (f"import pathlib\npathlib.Path({str(ws)!r}, 'ok.txt').write_text('in')\n"
            f"try:\n    pathlib.Path({str(outside)!r}, 'x.txt').write_text('out')\n"
            "except OSError as e:\n    print('denied', e.errno)\n")
    res = _py(box, code, ws)
    assert "denied" in res.text()
    assert (ws / "ok.txt").read_text() == "in"
    assert not (outside / "x.txt").exists()


def test_memory_limit(box, dirs):
    """Touching 2.5 GiB under a 512 MiB limit fails, and the peak memory the kernel counted
    (at least 90 % of the limit) labels it a limit kill."""
    ws, _, _ = dirs
    res = _py(box, "blocks = []\nfor _ in range(160):\n    blocks.append(b'x' * (16 << 20))\nprint('alloc')",
              ws, limits=Limits(wall_s=30, memory_mb=512))
    assert res.returncode != 0 and "alloc" not in res.text()
    assert res.killed_by_limit and res.peak_memory_mb >= 0.9 * 512


def test_untouched_reservations_are_no_memory_kill(box, dirs):
    """mmap reservations fail at RLIMIT_AS without using memory: a failure, not a limit kill
    the kernel can vouch for."""
    ws, _, _ = dirs
    res = _py(box, "import mmap\nblocks = [mmap.mmap(-1, 64 << 20) for _ in range(40)]\nprint('alloc')",
              ws, limits=Limits(wall_s=30, memory_mb=512))
    assert res.returncode != 0 and "alloc" not in res.text() and not res.killed_by_limit



@pytest.mark.parametrize("backend", ["unshare"])
def test_a_large_harness_does_not_make_a_small_run_a_memory_kill(backend, dirs):
    """The kernel keeps a process's peak RSS across ``execve``, so the reaped rusage of every
    child of a 700 MB harness starts at 700 MB: that inherited peak is not the child's memory."""
    import subprocess

    ws, _, _ = dirs
    code = f"""
import sys
from icml26.nl2repo import Limits, make_sandbox
ballast = bytearray(700 << 20)
for i in range(0, len(ballast), 4096):
    ballast[i] = 1
box = make_sandbox({backend!r})
res = box.run([sys.executable, '-I', '-c', 'import sys; sys.exit(1)'], cwd={str(ws)!r},
              env={{'PATH': '/usr/bin:/bin', 'HOME': {str(ws)!r}}}, limits=Limits(wall_s=30, memory_mb=512),
              rw_paths=[{str(ws)!r}])
print(res.returncode, res.killed_by_limit)
"""
    try:
        make_sandbox(backend)
    except SandboxUnavailable as exc:
        pytest.skip(str(exc))
    out = subprocess.run([PY, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1", "False"]

def test_process_limit(box, dirs):
    if not process_limit_enforced():
        pytest.skip("running as root without a writable pids cgroup: RLIMIT_NPROC never binds uid 0")
    ws, _, _ = dirs
    code = ("import os, time\nn = 0\nwhile n < 300:\n    pid = os.fork()\n"
            "    if pid == 0:\n        time.sleep(30); os._exit(0)\n    n += 1\nprint('forked', n)")
    start = time.monotonic()
    res = _py(box, code, ws, limits=Limits(wall_s=30, nproc=32))
    assert "forked 300" not in res.text()
    assert res.killed_by_limit
    assert time.monotonic() - start < 25   # sleeping children did not keep the run alive


def test_timeout_kills_background_children(box, dirs):
    ws, _, _ = dirs
    code = ("import os, time\nif os.fork() == 0:\n    os.setsid(); time.sleep(60)\n"
            "time.sleep(60)")
    start = time.monotonic()
    res = _py(box, code, ws, timeout_s=2)
    assert res.timed_out and time.monotonic() - start < 15
    assert not res.killed_by_limit


def test_output_capture_is_capped(isolated, dirs):
    ws, _, _ = dirs
    box = make_sandbox(isolated)
    res = _py(box, "import sys\nfor _ in range(64):\n    sys.stdout.buffer.write(b'\\xff' * (1 << 16))\n"
                   "print('tail')", ws)
    assert res.isolation == isolated
    assert len(res.stdout) <= CAPTURE_BYTES and res.stdout.endswith(b"tail\n")
    assert isinstance(res.text(), str)


def test_make_sandbox_rejects_unknown_kind():
    with pytest.raises(ValueError, match="sandbox"):
        make_sandbox("docker")


def test_bwrap_unavailable_names_package(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(SandboxUnavailable, match="bubblewrap"):
        BwrapSandbox()
    with pytest.raises(SandboxUnavailable, match="util-linux"):
        UnshareSandbox()


def test_none_backend_warns_loudly():
    with pytest.warns(RuntimeWarning, match="WITHOUT isolation"):
        box = make_sandbox("none")
    assert box.isolation == "none"


def test_runtime_under_tmp_is_bound_back(tmp_path, monkeypatch):
    """A venv under /tmp (a CI checkout there) must stay visible under the private /tmp."""
    from icml26.nl2repo.sandbox import _runtime

    venv = tmp_path / "venv"
    venv.mkdir()
    monkeypatch.setattr(sys, "prefix", str(venv))
    assert str(tmp_path).startswith("/tmp/")
    assert any(p == venv.resolve() or p in venv.resolve().parents for p in _runtime()[1])


def test_runtime_reached_through_a_symlink_keeps_the_link(tmp_path, monkeypatch):
    """A venv linked under /tmp: the link is recreated and its real folder bound."""
    import os

    from icml26.nl2repo.sandbox import _runtime

    real = tmp_path / "real-venv"
    real.mkdir()
    os.symlink(real, tmp_path / "linked-venv")
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "linked-venv"))
    links, dirs = _runtime()
    assert (tmp_path / "linked-venv", str(real)) in links
    assert real in dirs
