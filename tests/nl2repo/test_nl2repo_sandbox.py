"""The sandbox enforces what it claims: no network, hidden paths, no writes outside, limits."""

import shutil
import sys
import time

import pytest

from icml26.nl2repo import Limits, SandboxUnavailable, make_sandbox
from icml26.nl2repo.sandbox import (CAPTURE_BYTES, BwrapSandbox, UnshareSandbox,
                                    process_limit_enforced)

PY = sys.executable


@pytest.fixture
def dirs(tmp_path):
    ws, outside, hidden = tmp_path / "ws", tmp_path / "outside", tmp_path / "hidden"
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
    ws, _, _ = dirs
    res = _py(box, "import mmap\nblocks = [mmap.mmap(-1, 64 << 20) for _ in range(40)]\nprint('alloc')",
              ws, limits=Limits(wall_s=30, memory_mb=512))
    assert res.returncode != 0 and "alloc" not in res.text()
    assert res.killed_by_limit


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
    import sys

    from icml26.nl2repo.sandbox import _runtime_paths

    venv = tmp_path / "venv"
    venv.mkdir()
    monkeypatch.setattr(sys, "prefix", str(venv))
    assert str(tmp_path).startswith("/tmp/")
    assert any(p == venv.resolve() or p in venv.resolve().parents for p in _runtime_paths())
