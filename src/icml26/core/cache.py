"""The one user cache folder of icml26 (converted models, trained toy models, cached activations).

``$ICML26_CACHE`` when set, else ``platformdirs.user_cache_dir("icml26")`` (e.g. ``~/.cache/icml26``).
Methods keep their entries in a sub-folder named after themselves (``cache_root("rai")``) and write
them atomically (build in a temporary sibling folder, then ``os.replace``).
"""

from __future__ import annotations

import os
from pathlib import Path

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
    The stored or computed result (as read back from JSON when stored).

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
        with open(path) as handle:
            return json.load(handle)
    result = compute()
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as handle:
        json.dump(result, handle)
    os.replace(tmp, path)
    return result
