"""File access beneath a directory descriptor: no host path is resolved on an agent's behalf.

The step protocol's ``read_file`` / ``write_file`` run in the harness process, on folders a
sandboxed agent can change while the harness works on them. Resolving a path there
(``Path.resolve()``, then a check, then ``open``) races with the agent: a folder swapped for a
symlink between the check and the open (``renameat2(RENAME_EXCHANGE)``) sends the open to
any host path, with the harness's privileges. Here a folder is opened once, as a descriptor,
and every later path is resolved by the kernel *relative to that descriptor* with
``openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)``:
a symlink anywhere on the path, a ``..``, an absolute path or a mount crossing fails the
open itself, atomically. Where ``openat2`` is missing (Linux < 5.6, or filtered), the path is
walked one component at a time with ``openat(O_NOFOLLOW)``, which gives the same guarantee
for paths free of ``..`` (refused lexically before any walk). Only regular files are read or
written (a FIFO would block the harness, a device file is never opened).

References
----------
``openat2(2)`` (Linux 5.6). Our resolution of the host file race of the NL2Repo-Bench
harness's step protocol (not from the paper).
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat

__all__ = ["Beneath", "PathRefused", "split_relative", "openat2_available"]

_SYS_OPENAT2 = 437                      # the same number on every architecture (Linux 5.6+)
RESOLVE_NO_XDEV = 0x01
RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_NO_SYMLINKS = 0x04
RESOLVE_BENEATH = 0x08
_RESOLVE = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV
# errno values that mean "this path goes where it may not": a symlink, a `..`, a mount.
_REFUSED = {errno.ELOOP, errno.EXDEV, errno.ENOTDIR}


class PathRefused(OSError):
    """A path that leaves the folder, crosses a symlink or names something not a regular file."""


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


_STATE: dict = {}


def _libc():
    if "libc" not in _STATE:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        _STATE["libc"] = libc
    return _STATE["libc"]


def _openat2(dirfd: int, path: str, flags: int, mode: int) -> int:
    how = _OpenHow(flags | os.O_CLOEXEC, mode if flags & os.O_CREAT else 0, _RESOLVE)
    fd = _libc().syscall(ctypes.c_long(_SYS_OPENAT2), ctypes.c_int(dirfd),
                         ctypes.c_char_p(os.fsencode(path)), ctypes.byref(how),
                         ctypes.c_size_t(ctypes.sizeof(how)))
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), path)
    return int(fd)


def openat2_available() -> bool:
    """Whether the kernel offers ``openat2`` here (probed once per process)."""
    if "openat2" not in _STATE:
        fd = os.open("/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.close(_openat2(fd, ".", os.O_RDONLY | os.O_DIRECTORY, 0))
            _STATE["openat2"] = True
        except OSError as exc:
            if exc.errno not in (errno.ENOSYS, errno.EPERM, errno.EINVAL):
                raise
            _STATE["openat2"] = False
        finally:
            os.close(fd)
    return _STATE["openat2"]


def split_relative(path) -> list[str]:
    """The components of a relative path, or :class:`PathRefused`.

    Refused: a non-string, an empty path, an absolute path, a NUL byte, any ``..``.
    ``.`` and empty components are dropped.

    Examples
    --------
    >>> split_relative("pkg/./a.py")
    ['pkg', 'a.py']
    """
    if not isinstance(path, str) or "\0" in path:
        raise PathRefused(errno.EINVAL, "the path must be a string without NUL bytes", repr(path))
    if path.startswith("/"):
        raise PathRefused(errno.EXDEV, "absolute paths leave the workspace", path)
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if not parts:
        raise PathRefused(errno.EINVAL, "the path names no file", path)
    if ".." in parts:
        raise PathRefused(errno.EXDEV, "'..' leaves the workspace", path)
    return parts


class Beneath:
    """A folder, held open as a descriptor; every path is resolved beneath it by the kernel.

    Parameters
    ----------
    root : path
        The folder (opened once, ``O_DIRECTORY | O_NOFOLLOW``, when this object is made,
        before any untrusted process can change it).
    use_openat2 : bool, optional
        Force (``True``) or forbid (``False``) ``openat2``; default: when the kernel has it.

    Examples
    --------
    >>> import tempfile
    >>> with Beneath(tempfile.mkdtemp()) as ws:
    ...     ws.write_text("pkg/a.py", "x = 1\\n")
    ...     ws.read_text("pkg/a.py")
    'x = 1\\n'
    """

    def __init__(self, root, *, use_openat2: bool | None = None):
        self.fd = os.open(os.fspath(root), os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        self.use_openat2 = openat2_available() if use_openat2 is None else use_openat2

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> "Beneath":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- resolution --------------------------------------------------------------------------
    def _open_at(self, dirfd: int, name: str, flags: int, mode: int = 0o644) -> int:
        try:
            if self.use_openat2:
                return _openat2(dirfd, name, flags, mode)
            return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dirfd)
        except OSError as exc:
            if exc.errno in _REFUSED:
                raise PathRefused(exc.errno, "the path crosses a symlink, a mount or a non-folder",
                                  name) from None
            raise

    def _parent(self, parts: list, create: bool) -> int:
        """A new descriptor of the folder holding ``parts[-1]`` (created when ``create``)."""
        cur = os.dup(self.fd)
        try:
            for name in parts[:-1]:
                try:
                    nxt = self._open_at(cur, name, os.O_RDONLY | os.O_DIRECTORY)
                except FileNotFoundError:
                    if not create:
                        raise
                    try:
                        os.mkdir(name, 0o755, dir_fd=cur)   # mkdirat never follows a final symlink
                    except FileExistsError:
                        pass
                    nxt = self._open_at(cur, name, os.O_RDONLY | os.O_DIRECTORY)
                os.close(cur)
                cur = nxt
            return cur
        except BaseException:
            os.close(cur)
            raise

    def _open_file(self, path, flags: int, create: bool) -> int:
        parts = split_relative(path)
        parent = self._parent(parts, create)
        try:
            fd = self._open_at(parent, parts[-1], flags | os.O_NONBLOCK)
        finally:
            os.close(parent)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise PathRefused(errno.EINVAL, "not a regular file", path)
        return fd

    # -- the operations ----------------------------------------------------------------------
    def read_bytes(self, path, limit: int) -> bytes:
        """At most ``limit`` bytes of the regular file ``path`` beneath the folder."""
        fd = self._open_file(path, os.O_RDONLY, create=False)
        try:
            chunks, left = [], int(limit)
            while left > 0:
                chunk = os.read(fd, min(left, 1 << 20))
                if not chunk:
                    break
                chunks.append(chunk)
                left -= len(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)

    def read_text(self, path, limit: int = 1 << 20) -> str:
        return self.read_bytes(path, limit).decode("utf-8", errors="replace")

    def write_bytes(self, path, data: bytes) -> None:
        """Create or truncate the regular file ``path`` (and its folders) beneath the folder."""
        fd = self._open_file(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, create=True)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)

    def write_text(self, path, text: str) -> None:
        self.write_bytes(path, text.encode("utf-8"))

    def count_lines(self, path, limit: int) -> int:
        """Newlines in the first ``limit`` bytes of ``path`` (0 when it is absent or refused)."""
        try:
            return self.read_bytes(path, limit).count(b"\n")
        except OSError:
            return 0
