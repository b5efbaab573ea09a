"""The one way icml26 writes a file: atomically (a temporary sibling, then a rename).

Every cache entry, ledger, report and README block goes through :func:`atomic_file` (or its
text/bytes shorthands), so an interrupt never leaves a half-written file, and a new file gets
the mode a plain ``open(path, "w")`` would give (0644 under the usual umask 022), not the 0600
of :func:`tempfile.mkstemp`.

Examples
--------
>>> import tempfile, pathlib
>>> target = pathlib.Path(tempfile.mkdtemp()) / "sub" / "x.txt"
>>> atomic_write_text(target, "hello")
>>> target.read_text(), oct(target.stat().st_mode & 0o777) == oct(0o666 & ~umask())
('hello', True)
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

__all__ = ["atomic_file", "atomic_write_text", "atomic_write_bytes", "umask"]


def umask() -> int:
    """The process's current umask (read without changing it for longer than the call)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_file(path):
    """Yield a temporary sibling path to write; on success rename it onto ``path``.

    The parent folder is created. On any exception the temporary file is removed and
    ``path`` is untouched.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "x.json"
    >>> with atomic_file(target) as tmp:
    ...     _ = tmp.write_text("{}")
    >>> target.read_text()
    '{}'
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


def atomic_write_text(path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    with atomic_file(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def atomic_write_bytes(path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically."""
    with atomic_file(path) as tmp:
        tmp.write_bytes(data)
