"""The harness's pytest plugin: every test report, as it happens, over an inherited pipe.

Copied by :mod:`icml26.nl2repo.harness` into the grading venv as ``_nl2repo_reporter`` and
loaded with ``-p _nl2repo_reporter``, so it is imported before any code under test. The
write end of a pipe whose read end the harness holds (outside the sandbox) arrives as
``$NL2REPO_REPORT_FD``; the variable is removed at import. Each event is one JSON line.
What arrives is final: code that runs later (an ``atexit`` hook, a wrapper around the
interpreter) can edit the JUnit file but not what the harness already received, and a line
it injects shows up as a duplicate, an unknown node or text after the end.
"""

import json
import os

import pytest

REMOTE_PLUGIN = "<a module of the package under test>"
_FD = None
_RAW = os.environ.pop("NL2REPO_REPORT_FD", None)
if _RAW is not None and _RAW.isdigit():
    _FD = int(_RAW)


def _send(event: dict) -> None:
    global _FD
    if _FD is None:
        return
    data = (json.dumps(event, separators=(",", ":")) + "\n").encode()
    try:
        while data:
            data = data[os.write(_FD, data):]
    except OSError:
        _FD = None


_send({"ev": "start"})


def pytest_plugin_registered(plugin, manager):
    """Every plugin registered after this one, with the file it comes from."""
    name = manager.get_name(plugin) if hasattr(manager, "get_name") else None
    if type(plugin).__name__ == "RemoteModule" and type(plugin).__module__ == "_nl2repo_trusted":
        where = REMOTE_PLUGIN          # a module of the package's, listed in a `pytest_plugins`
    else:
        where = getattr(plugin, "__file__", None) or getattr(type(plugin), "__module__", None)
    _send({"ev": "plugin", "name": str(name), "file": str(where)})


def pytest_collectreport(report):
    if report.failed or report.skipped:
        _send({"ev": "collect", "nodeid": report.nodeid, "outcome": report.outcome})


def _hook_files(config):
    """Each (plugin, file of the code of its hook functions): a module's ``__file__`` can say
    anything, the code object's ``co_filename`` is where the function was compiled."""
    seen = set()
    for plugin in config.pluginmanager.get_plugins():
        name = config.pluginmanager.get_name(plugin)
        for attr in dir(plugin):
            if not attr.startswith("pytest_"):
                continue
            try:
                fn = getattr(plugin, attr)
            except Exception:
                continue
            fn = getattr(fn, "__func__", fn)
            while hasattr(fn, "__wrapped__"):
                fn = fn.__wrapped__
            code = getattr(fn, "__code__", None)
            where = (code.co_filename, code.co_firstlineno, code.co_name) if code else ("<no code>", 0, attr)
            if (name, where) not in seen:
                seen.add((name, where))
                _send({"ev": "hookimpl", "plugin": str(name), "file": str(where[0]), "line": int(where[1]),
                       "func": str(where[2])})


def pytest_collection_finish(session):
    _send({"ev": "collected", "items": [item.nodeid for item in session.items]})
    _hook_files(session.config)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logreport(report):
    if report.when == "call" or not report.passed:
        _send({"ev": "report", "nodeid": report.nodeid, "when": report.when,
               "outcome": report.outcome, "xfail": hasattr(report, "wasxfail")})


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    _hook_files(session.config)           # plugins registered while the tests ran
    _send({"ev": "finish", "exitstatus": int(exitstatus)})


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    _send({"ev": "end"})
