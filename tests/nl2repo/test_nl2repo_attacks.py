"""Attack agents, one per attack class of the second forgery audit: each implements nothing.

Every agent runs with the project's own interpreter (``sys.executable``, never a ``python``
found on ``PATH``), inside the sandbox, on each isolating backend present (``box``: bubblewrap
and ``unshare``; a backend this machine lacks is skipped with the reason). Each must score 0
and leave the flag named below; the oracle still scores 1.0 (``test_oracle_still_complete``).
The agents are in ``attack_agents.py``; the harness never ships them.
"""

import json
import sys
from pathlib import Path

import pytest

from icml26.nl2repo import AgentSpec, Limits, builtin_tasks, evaluate, reference_agent

from icml26.nl2repo.baselines import AGENTS_SCRIPT

# The reference agents' helpers, then the attacks (one piece of code for building packages).
ATTACK_SOURCE = (AGENTS_SCRIPT.read_text().split('\nif __name__ == "__main__":')[0] + "\n\n"
                 + (Path(__file__).resolve().parent / "attack_agents.py").read_text())

# The flag (prefixes; one must appear) each attack leaves once the harness stops it.
FLAG = {
    "inject_tests": ("tamper:foreign_node:", "suspect:pytest_internals"),
    "stream_memerr": ("tamper:report_honeypot", "agent_exit:"),
    "stream_segv": ("tamper:report_honeypot", "agent_exit:"),
    "runtest_noop": "suspect:",
    "code_swap": "suspect:",
    "magic_eq": "suspect:",
    "shadow_pygments": "tamper:shadows:pygments",
    "shadow_distutils_hack": "tamper:shadows:_distutils_hack",
    "fake_file_plugin": "suspect:",
}


def attacker(name: str, task, extra: dict | None = None) -> AgentSpec:
    """The attack agent ``name`` for ``task``, run by this interpreter."""
    spec = {"task": task.id, "package": task.package, "manifest": list(task.manifest.tests),
            "modules": [{"name": m.name, "deps": list(m.deps), "exports": list(m.exports)}
                        for m in task.modules], **(extra or {})}
    return AgentSpec([sys.executable, "-I", "-c", ATTACK_SOURCE, name],
                     env={"NL2REPO_AGENT_SPEC": json.dumps(spec)},
                     protocol="steps" if name == "race_steps" else "subprocess", name=f"attack:{name}")


def run_attack(name: str, box, task_id: str = "unitconv", extra: dict | None = None,
               wall_s: float = 120) -> dict:
    task = builtin_tasks([task_id])[0]
    res = evaluate([task], attacker(name, task, extra), sandbox=box,
                   limits=Limits(wall_s=wall_s, max_steps=20000), validate=False)
    return res.records[0]


@pytest.mark.parametrize("name", sorted(FLAG))
def test_attack_scores_zero_and_is_flagged(name, box):
    rec = run_attack(name, box)
    assert rec["isolation"] == box.isolation
    assert (rec["score"], rec["n_passed"]) == (0.0, 0), (rec["label"], rec["flags"])
    assert any(f.startswith(FLAG[name]) for f in rec["flags"]), (rec["label"], rec["flags"])   # str.startswith takes a tuple


@pytest.mark.parametrize("name", ["runtest_noop", "magic_eq"])
def test_twin_discrimination_fails_on_a_second_task(name, isolated):
    """The issue measured the twin discriminators on humanfmt too (0.91 and 1.0 there)."""
    rec = run_attack(name, isolated, task_id="humanfmt")
    assert (rec["score"], rec["n_passed"]) == (0.0, 0), (rec["label"], rec["flags"])


def test_host_file_race_reads_and_writes_nothing_on_the_host(box, tmp_path):
    """Step protocol: a tool hands the workspace to the driver, which swaps a folder and a
    symlink while the harness serves read_file / write_file: nothing of the host is read
    (the reference solution) and nothing is written there."""
    task = builtin_tasks(["unitconv"])[0]
    ref = task.reference_dir
    files = sorted(p.relative_to(ref).as_posix() for p in ref.rglob("*")
                   if p.is_file() and "__pycache__" not in p.parts)
    outside = tmp_path / "host-dir"
    outside.mkdir()
    rec = run_attack("race_steps", box, extra={"target_dir": str(ref), "target_files": files,
                                               "write_dir": str(outside)}, wall_s=600)
    assert not (outside / "PWNED_BY_RACE").exists()
    assert "RACE read 0/" in rec["agent_stderr"], rec["agent_stderr"][-2000:]
    assert (rec["score"], rec["label"]) == (0.0, "no_output"), rec["flags"]
    assert any(f.startswith("agent:tool_refused:") for f in rec["flags"]), rec["flags"]


def test_oracle_still_complete(box):
    task = builtin_tasks(["unitconv"])[0]
    rec = evaluate([task], reference_agent("oracle"), sandbox=box, validate=False).records[0]
    assert (rec["score"], rec["label"]) == (1.0, "complete"), rec["flags"]
