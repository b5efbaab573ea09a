"""A job's prints, stderr writes and log records go to the run's log file, not the terminal."""

import logging
import sys
from dataclasses import dataclass

from icml26.core.experiment import Experiment, Part, Result
from icml26.core.report import write_report
from icml26.core.runner import run_experiment, run_job


@dataclass(frozen=True)
class _Config:
    n: int = 1


def _chatty(config, seed):
    print("[chatty] loading weights 100%")
    print("progress bar", file=sys.stderr)
    logging.getLogger("chatty.lib").warning("a library log record")
    return {"x": 1.0}


def test_job_output_is_captured_not_printed(capsys):
    logger = logging.getLogger("chatty.lib")
    handler = logging.StreamHandler(sys.stderr)          # made before the job, like HF's
    logger.addHandler(handler)
    try:
        result = run_job(_chatty, "p", _Config(), 0, None)
    finally:
        logger.removeHandler(handler)
    out, err = capsys.readouterr()
    assert "[chatty]" not in out + err and "a library log record" not in out + err
    assert "[chatty] loading weights" in result.output and "progress bar" in result.output
    assert "a library log record" in result.output
    assert handler.stream is sys.stderr                  # restored after the job


def test_the_report_has_a_run_log_with_each_jobs_output(tmp_path):
    exp = Experiment(slug="chatty", title="Chatty", parts=[Part(
        name="main", run=_chatty, summarize=lambda jobs, c: Result(), quick=_Config(),
        full=_Config(), quick_seeds=(0, 1))])
    out = write_report([run_experiment(exp, quick=True)], tmp_path / "r")
    log = (out / "run.log").read_text()
    assert log.count("== chatty · main · seed") == 2 and "[chatty] loading weights" in log
