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
