"""Workspace file access beneath a directory descriptor (the step protocol's read/write tools)."""

import os
import subprocess
import sys

import pytest

from icml26.nl2repo.beneath import Beneath, PathRefused, openat2_available, split_relative

MODES = [pytest.param(True, id="openat2"), pytest.param(False, id="nofollow-walk")]
RACE_REQUESTS = 2000       # read_file and write_file requests each, while the swapper runs

# Swaps ws/d (a folder) and ws/l (a symlink to a host folder) as fast as it can.
SWAPPER = """
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
ws = sys.argv[1].encode()
a, b = ws + b"/d", ws + b"/l"
print("ready", flush=True)
while True:
    libc.renameat2(-100, a, -100, b, 2)      # AT_FDCWD, RENAME_EXCHANGE
"""


def _files(tmp_path, use_openat2):
    if use_openat2 and not openat2_available():
        pytest.skip("openat2 is not available on this kernel")
    return Beneath(tmp_path, use_openat2=use_openat2)


@pytest.mark.parametrize("use_openat2", MODES)
def test_read_write_inside(tmp_path, use_openat2):
    with _files(tmp_path, use_openat2) as files:
        files.write_text("pkg/sub/a.py", "x = 1\n")
        assert (tmp_path / "pkg" / "sub" / "a.py").read_text() == "x = 1\n"
        assert files.read_text("./pkg//sub/a.py") == "x = 1\n"
        files.write_text("pkg/sub/a.py", "y")                       # truncates
        assert files.read_bytes("pkg/sub/a.py", 10) == b"y"
        assert files.read_bytes("pkg/sub/a.py", 0) == b""


@pytest.mark.parametrize("use_openat2", MODES)
@pytest.mark.parametrize("path", ["../x", "a/../../x", "/etc/passwd", "", ".", "a\0b", None, 3])
def test_paths_that_leave_are_refused(tmp_path, use_openat2, path):
    with _files(tmp_path, use_openat2) as files:
        with pytest.raises(PathRefused):
            files.write_text(path, "x")
        with pytest.raises(PathRefused):
            files.read_text(path)


@pytest.mark.parametrize("use_openat2", MODES)
def test_symlinks_anywhere_are_refused(tmp_path, use_openat2):
    outside = tmp_path / "outside"
    ws = tmp_path / "ws"
    (ws / "real").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret").write_text("host")
    os.symlink(outside, ws / "dirlink")
    os.symlink(outside / "secret", ws / "real" / "filelink")
    os.symlink("real", ws / "inner")                           # even a link that stays inside
    with _files(ws, use_openat2) as files:
        for path in ("dirlink/secret", "real/filelink", "inner/x"):
            with pytest.raises(PathRefused):
                files.read_text(path)
            with pytest.raises(PathRefused):
                files.write_text(path, "written")
    assert (outside / "secret").read_text() == "host" and sorted(os.listdir(outside)) == ["secret"]


@pytest.mark.parametrize("use_openat2", MODES)
def test_fifo_and_folders_are_not_files(tmp_path, use_openat2):
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "folder").mkdir()
    with _files(tmp_path, use_openat2) as files:
        with pytest.raises(PathRefused, match="regular"):
            files.read_text("pipe")                            # would block a plain open()
        with pytest.raises(OSError):
            files.write_text("pipe", "x")
        with pytest.raises(OSError):
            files.read_text("folder")
        assert files.count_lines("missing", 100) == 0


def _naive_read(ws, rel):
    """The old tool: resolve, check, then open (a check-then-use race)."""
    target = (ws / rel).resolve()
    target.relative_to(ws.resolve())
    return target.read_text()


@pytest.mark.parametrize("use_openat2", MODES)
def test_racing_folder_symlink_swaps_never_escape(tmp_path, use_openat2):
    """A process swaps ws/d and a symlink to a host folder (renameat2 RENAME_EXCHANGE) while
    thousands of read and write requests are served: none reads or writes the host folder.
    The old resolve-then-open code, run against the same swapper, does escape (the race is
    real in this world)."""
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    (ws / "d").mkdir(parents=True)
    outside.mkdir()
    (ws / "d" / "secret.txt").write_text("decoy")
    (outside / "secret.txt").write_text("HOST SECRET")
    os.symlink(outside, ws / "l")
    with _files(ws, use_openat2) as files:
        swapper = subprocess.Popen([sys.executable, "-I", "-c", SWAPPER, str(ws)], stdout=subprocess.PIPE)
        try:
            assert swapper.stdout.readline().strip() == b"ready"
            escapes = refused = 0
            for _ in range(RACE_REQUESTS):
                try:
                    escapes += files.read_text("d/secret.txt") == "HOST SECRET"
                except PathRefused:
                    refused += 1
                try:
                    files.write_text("d/planted.txt", "agent")
                except PathRefused:
                    refused += 1
            naive = 0
            for _ in range(RACE_REQUESTS):
                try:
                    naive += _naive_read(ws, "d/secret.txt") == "HOST SECRET"
                except (ValueError, OSError):
                    pass
        finally:
            swapper.kill()
            swapper.wait()
    assert escapes == 0 and not (outside / "planted.txt").exists()
    assert refused > 0, "the swapper never raced a request"
    assert naive > 0, "positive control: the old resolve-then-open never escaped"


def test_split_relative():
    assert split_relative("a/./b//c") == ["a", "b", "c"]
    with pytest.raises(PathRefused):
        split_relative("a/../b")
