"""Build the stdlib corpus text (stdlib only: run as ``python -I -S _corpus_build.py SOURCE``).

Kept free of third-party imports so that a fresh interpreter can build the corpus without
anything else loaded: some libraries patch stdlib classes on import (``transformers`` adds
``warning_once`` and friends to ``logging.Logger``), which would change the docstrings seen.
"""

import contextlib
import importlib
import inspect
import io
import sys
import warnings

# Modules with import-time side effects (browser, prints, GUI, network) or huge trees.
_SKIP_MODULES = frozenset({
    "antigravity", "this", "idlelib", "turtle", "turtledemo", "tkinter", "lib2to3",
    "ensurepip", "venv", "pydoc_data", "test", "msilib", "winreg", "winsound", "_msi",
    "nt", "msvcrt", "_winapi", "asyncio.windows_events", "curses", "readline", "sre_compile",
    "sre_constants", "sre_parse", "crypt", "nis", "spwd", "ossaudiodev", "sqlite3",
})


def _public_docstrings(module) -> list:
    docs = [inspect.getdoc(module)]
    for name in sorted(getattr(module, "__all__", None) or dir(module)):
        if name.startswith("_"):
            continue
        obj = getattr(module, name, None)
        if not (inspect.isclass(obj) or inspect.isfunction(obj) or inspect.isbuiltin(obj)):
            continue
        if getattr(obj, "__module__", None) != module.__name__:
            continue
        docs.append(inspect.getdoc(obj))
        if inspect.isclass(obj):
            for attr in sorted(vars(obj)):
                if not attr.startswith("_") and callable(vars(obj)[attr]):
                    docs.append(inspect.getdoc(vars(obj)[attr]))
    return docs


def build_corpus(python_docs: bool = True, docstrings: bool = True) -> str:
    """English prose that ships with Python: language-reference topics + stdlib docstrings.

    Deterministic for a given Python build: sorted topics and module names, duplicate
    texts dropped, pieces joined by blank lines. :func:`stdlib_text` is the cached,
    hash-checked entry point; this function always rebuilds.

    Parameters
    ----------
    python_docs : bool
        Include ``pydoc_data.topics.topics`` (the language reference, ~465k chars).
    docstrings : bool
        Include ``inspect.getdoc`` of public stdlib modules, classes and functions.

    Returns
    -------
    str

    Examples
    --------
    >>> len(build_corpus(docstrings=False)) > 100_000
    True
    """
    if not (python_docs or docstrings):
        raise ValueError("at least one of python_docs, docstrings must be True")
    pieces, seen = [], set()

    def add(text):
        if text and text.strip() and text not in seen:
            seen.add(text)
            pieces.append(text.strip())

    if python_docs:
        from pydoc_data.topics import topics
        for key in sorted(topics):
            add(topics[key])
    if docstrings:
        for name in sorted(sys.stdlib_module_names):
            if name.startswith("_") or name in _SKIP_MODULES:
                continue
            try:
                with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
                    warnings.simplefilter("ignore")
                    module = importlib.import_module(name)
            except Exception:  # noqa: BLE001 - modules absent from this build are skipped
                continue
            for doc in _public_docstrings(module):
                add(doc)
    return "\n\n".join(pieces)


if __name__ == "__main__":
    source = sys.argv[1]
    text = build_corpus(python_docs=source != "docstrings", docstrings=source != "topics")
    sys.stdout.buffer.write(text.encode("utf-8"))
