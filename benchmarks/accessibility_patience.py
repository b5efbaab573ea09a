"""accessibility (#50): the arms' early-stopping patience, replayed on recorded dev-CE histories.

The rule (ours, a Resolution): evaluate dev CE every ``eval_every`` steps, keep the best checkpoint
(step 0 = the base) and stop after ``patience`` evaluations without improvement. Training is
deterministic, so a run with a smaller patience follows the same trajectory up to its stop; the
checkpoint it keeps is the one the replay of the recorded dev history finds. This script replays
the histories of every early-stopped arm of a recorded run (``verdicts-jobs.json.gz``: the
pathway parts, 5 seeds x 5 trained arms at patience 5) under patience 1..5 and reports, for
each patience, how many arms keep the same checkpoint and how many training steps the arms run.

It writes one row per (patience, arm, seed) to ``ledger/accessibility/patience_replay.jsonl``;
the test suite checks the shipped ``PathwayConfig.patience`` against those rows.

Run: ``python benchmarks/accessibility_patience.py [ledger/accessibility/verdicts-jobs.json.gz]``.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
JOBS = ROOT / "ledger" / "accessibility" / "verdicts-jobs.json.gz"
OUT = ROOT / "ledger" / "accessibility" / "patience_replay.jsonl"


def replay(history: list, patience: int) -> tuple:
    """``(best_step, steps_run)`` of the early-stopping rule on a dev history (step 0 first)."""
    best, best_step, bad = history[0]["dev_ce"], history[0]["step"], 0
    for entry in history[1:]:
        if entry["dev_ce"] < best:
            best, best_step, bad = entry["dev_ce"], entry["step"], 0
        else:
            bad += 1
        if bad >= patience:
            return best_step, entry["step"]
    return best_step, history[-1]["step"]


def rows(jobs_file: Path = JOBS, recorded_patience: int = 5) -> list:
    jobs = json.loads(gzip.open(jobs_file).read())
    seen, out = set(), []
    for part in ("pathway", "pathway5"):
        for job in jobs.get(part, []):
            m = job["metrics"]
            arm, seed = m.get("arm"), job["seed"]
            if (arm, seed) in seen or m.get("skipped") or arm.endswith("_no_early_stop") or arm == "bias_only":
                continue
            seen.add((arm, seed))
            recorded = (m["best_step"], m["steps_run"])
            if replay(m["history"], recorded_patience) != recorded:
                raise ValueError(f"{arm} seed {seed}: the replay at patience {recorded_patience} gives "
                                 f"{replay(m['history'], recorded_patience)}, the record {recorded}")
            for patience in range(1, recorded_patience + 1):
                best, run = replay(m["history"], patience)
                out.append({"patience": patience, "arm": arm, "seed": seed, "best_step": best, "steps_run": run,
                            "recorded_best_step": recorded[0], "recorded_steps_run": recorded[1],
                            "same_checkpoint": best == recorded[0], "source": f"{jobs_file.name}:{part}"})
    return out


def main(argv: list) -> None:
    table = rows(Path(argv[0]) if argv else JOBS)
    OUT.write_text("".join(json.dumps(r) + "\n" for r in table))
    print(f"{'patience':>8s} {'arms':>5s} {'same checkpoint':>16s} {'steps run (sum)':>16s}")
    for patience in sorted({r["patience"] for r in table}):
        sel = [r for r in table if r["patience"] == patience]
        print(f"{patience:8d} {len(sel):5d} {sum(r['same_checkpoint'] for r in sel):16d} "
              f"{sum(r['steps_run'] for r in sel):16d}")
    print(f"rows: {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main(sys.argv[1:])
