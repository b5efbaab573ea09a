"""The forgery audit: one forger per attack class scores 0 and is flagged, on every backend.

Each forger implements nothing and attacks the grading itself (see ``agents.py``); on the
earlier harness each scored 1.0 or went unstopped. ``box`` runs each on bubblewrap and on
``unshare``, skipping a backend this machine lacks (CI installs no bubblewrap).
"""

import pytest

from icml26.nl2repo import Limits, builtin_tasks, evaluate, reference_agent
from icml26.nl2repo.baselines import CONTROL_EXPECTED_LABEL, FORGERS

# The flag each forger must leave; git_history and tmpfs_hog are stopped, not detected, and
# atexit_rewrite runs in the package's worker, where there is no result file to rewrite.
FLAG = {"canary_spare": "suspect:pytest_internals", "plugin_export": "tamper:pytest_plugin_from_package:",
        "atexit_rewrite": None, "pth_append": "tamper:modified:lib/",
        "python_wrapper": "tamper:modified:bin/python", "exit_at_import": "agent_exit:"}


def _forge(name, box, memory_mb=4096, tmpfs_mb=512, env=None, task="kvlog"):
    factory = reference_agent("control", control=name)

    def agent(t):
        spec = factory(t)
        spec.env.update(env or {})
        return spec

    limits = Limits(wall_s=60, memory_mb=memory_mb, tmpfs_mb=tmpfs_mb)
    return evaluate(builtin_tasks([task]), agent, sandbox=box, limits=limits, validate=False).records[0]


@pytest.mark.parametrize("name", [f for f in FORGERS if f not in ("tmpfs_hog", "git_history")])
def test_forger_scores_zero_and_is_flagged(name, box):
    rec = _forge(name, box)
    assert rec["isolation"] == box.isolation
    assert (rec["score"], rec["n_passed"], rec["label"]) == (0.0, 0, CONTROL_EXPECTED_LABEL[name]), rec["flags"]
    assert FLAG[name] is None or any(f.startswith(FLAG[name]) for f in rec["flags"]), rec["flags"]
    assert not any(f.startswith("forgery") for f in rec["flags"]), rec["flags"]   # records always agree


def test_history_and_checkouts_are_not_readable(box):
    rec = _forge("git_history", box)
    assert "HISTORY found no readable history or tasks checkout" in rec["agent_stdout"]
    assert (rec["score"], rec["label"]) == (0.0, "no_output")


def test_tmpfs_hog_is_stopped_and_labelled(box):
    """1 GiB into /tmp + /dev/shm under a 512 MiB memory limit: killed, resource_killed."""
    rec = _forge("tmpfs_hog", box, memory_mb=512, tmpfs_mb=512, env={"NL2REPO_HOG_MB": "1024"})
    assert "without being stopped" not in rec["agent_stdout"]
    assert (rec["score"], rec["label"], rec["agent_killed_by_limit"]) == (0.0, "resource_killed", True)


def test_canary_sparing_forger_has_nothing_to_patch_on_a_second_task(isolated):
    """The forgers were measured on unitconv and humanfmt: patching pytest's reports in the
    package's process changes no verdict, since the verdicts are made in another process."""
    rec = _forge("canary_spare", isolated, task="humanfmt")
    assert (rec["score"], rec["label"]) == (0.0, "partial") and rec["n_twins"] >= 10


def test_evaluate_refuses_an_environment_it_cannot_bridge(isolated, monkeypatch):
    """A grading venv that cannot reach setuptools fails the reference: a clear error, not 0.0."""
    from icml26.nl2repo import ManifestMismatchError, harness, install

    monkeypatch.setattr(harness, "_VALIDATED", set())     # validated earlier in this process
    monkeypatch.setattr(install, "bridge_paths", lambda: ["/nonexistent/site-packages"])
    with pytest.raises(ManifestMismatchError, match="install_failed"):
        evaluate(builtin_tasks(["kvlog"]), reference_agent("null"), sandbox=isolated)


def test_evaluate_through_a_symlinked_venv_under_tmp(isolated, tmp_path):
    """Python run through a venv linked under /tmp: the oracle still scores 1.0."""
    import os
    import subprocess
    import sys

    link = tmp_path / "linked-venv"
    os.symlink(os.path.realpath(sys.prefix), link)
    code = ("import warnings; warnings.simplefilter('ignore')\n"
            "from icml26.nl2repo import builtin_tasks, evaluate, reference_agent\n"
            f"r = evaluate(builtin_tasks(['kvlog']), reference_agent('oracle'), sandbox={isolated!r})\n"
            "rec = r.records[0]; print(rec['score'], rec['label'])\n")
    res = subprocess.run([str(link / "bin" / "python"), "-c", code], capture_output=True, text=True,
                         timeout=600, cwd="/")
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.split() == ["1.0", "complete"]
