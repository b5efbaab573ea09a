"""The one user cache folder of icml26 (converted models, trained toy models, cached activations).

``$ICML26_CACHE`` when set, else ``platformdirs.user_cache_dir("icml26")`` (e.g. ``~/.cache/icml26``).
Methods keep their entries in a sub-folder named after themselves (``cache_root("rai")``) and write
them atomically (:func:`icml26.core.io.atomic_file`, :func:`atomic_folder`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

from .io import atomic_file  # noqa: F401 - re-exported: methods write cache entries with it

CACHE_ENV = "ICML26_CACHE"


def cache_root(*parts: str) -> Path:
    """The icml26 cache folder, or a sub-folder of it (not created).

    Parameters
    ----------
    *parts : str
        Path components below the root, e.g. ``cache_root("zoo", "smollm2")``.

    Returns
    -------
    pathlib.Path
    """
    for p in parts:
        if not isinstance(p, str) or not p or os.sep in p or p in (".", ".."):
            raise ValueError(f"cache_root parts must be plain folder names, got {p!r}")
    root = os.environ.get(CACHE_ENV)
    if not root:
        import platformdirs

        root = platformdirs.user_cache_dir("icml26")
    return Path(root).expanduser().joinpath(*parts)


def cached_json(folder, prefix: str, key, compute):
    """The stored JSON result of a job, or ``compute()`` stored atomically (resumable runs).

    Parameters
    ----------
    folder : path or "" / None
        Where results are kept; empty means no caching (``compute()`` is returned as is).
    prefix : str
        Start of the file name (e.g. ``"C_seed3"``), for people reading the folder.
    key : JSON-serialisable
        Everything the result depends on (config without the cache folder, seed, task, a code
        version); its SHA-256 names the file, so a changed key never reuses a stale result.
    compute : callable
        ``compute() -> JSON-serialisable``.

    Returns
    -------
    The stored or computed result (as read back from JSON when stored). An entry that does not
    parse (a truncated or garbled file) is a miss: it is recomputed and replaced, with one
    ``RuntimeWarning`` naming the file.

    Examples
    --------
    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> cached_json(d, "job", {"seed": 0}, lambda: {"x": 1.0})
    {'x': 1.0}
    >>> cached_json(d, "job", {"seed": 0}, lambda: {"x": 2.0})   # read back, not recomputed
    {'x': 1.0}
    """
    import hashlib
    import json

    if not folder:
        return compute()
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{prefix}_{digest}.json")
    if os.path.exists(path):
        try:
            with open(path, encoding="utf-8") as handle:
                return json.load(handle)
        except (OSError, ValueError) as exc:  # truncated, garbled or unreadable: a miss
            _warn_once(path, f"icml26 cache entry {path} could not be read ({exc}); "
                             "recomputing it and replacing the entry")
    result = compute()
    with atomic_file(path) as tmp:
        tmp.write_text(json.dumps(result))
    return result


_WARNED: set = set()


def _warn_once(key, message: str) -> None:
    """Emit ``message`` as a RuntimeWarning the first time ``key`` is seen in this process."""
    import warnings

    if key not in _WARNED:
        _WARNED.add(key)
        warnings.warn(message, RuntimeWarning, stacklevel=3)


@contextlib.contextmanager
def atomic_folder(path):
    """Build a folder atomically: yield a temporary sibling, then rename it onto ``path``.

    On success an existing ``path`` is replaced; on any failure the temporary folder is removed,
    so ``path`` is never half-written.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "entry"
    >>> with atomic_folder(target) as tmp:
    ...     _ = (tmp / "a.txt").write_text("x")
    >>> sorted(p.name for p in target.iterdir())
    ['a.txt']
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    try:
        yield tmp
        if path.exists():
            shutil.rmtree(path)
        os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


