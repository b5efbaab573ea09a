"""Sandbox selection for the nl2repo tests.

Tests that assert isolation run on whatever backend ``make_sandbox("auto")`` finds here
(bubblewrap, else ``unshare``) and check that the run really used it. Only when no isolating
backend works on this machine are they skipped, with the reason stated; they never run
under ``sandbox='none'`` and pass.
"""

import warnings

import pytest

from icml26.nl2repo import SandboxUnavailable, make_sandbox

NO_ISOLATION = ("no isolating sandbox works on this machine (bubblewrap not installed or "
                "unusable, and unshare user namespaces unavailable): install the Debian package "
                "'bubblewrap' or enable unprivileged user namespaces")


def isolating_kind() -> str:
    """The backend ``make_sandbox('auto')`` picks here, or skip when it would be 'none'."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        box = make_sandbox("auto")
    if box.isolation == "none":
        pytest.skip(NO_ISOLATION)
    return box.isolation


@pytest.fixture
def isolated():
    """Name of a working isolating backend (``'bwrap'`` or ``'unshare'``)."""
    return isolating_kind()


@pytest.fixture(params=["bwrap", "unshare"])
def box(request):
    """Each isolating backend, probed; one that cannot run here is skipped with its reason."""
    try:
        return make_sandbox(request.param)
    except SandboxUnavailable as exc:
        pytest.skip(f"sandbox {request.param!r} unavailable here: {exc}")
