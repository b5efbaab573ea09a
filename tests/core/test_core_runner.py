import pytest

from icml26.core.example import EXPERIMENT
from icml26.core.runner import resolve_seeds, run_experiment, run_part


def _metrics(outcome):
    return sorted((j.seed, j.task["n"], j.metrics["mean_abs_error"])
                  for p in outcome.parts for j in p.jobs)


@pytest.fixture(scope="module")
def sequential():
    return run_experiment(EXPERIMENT, quick=True)


def test_sequential_run_passes_its_claim(sequential):
    assert sequential.passed
    assert len(sequential.parts[0].jobs) == 4  # 2 seeds x 2 sizes


def test_joblib_gives_identical_metrics(sequential):
    assert _metrics(run_experiment(EXPERIMENT, quick=True, jobs=2)) == _metrics(sequential)


@pytest.mark.timeout(180)
def test_dask_local_cluster_gives_identical_metrics(sequential):
    outcome = run_experiment(EXPERIMENT, quick=True, jobs=2, scheduler="local")
    assert _metrics(outcome) == _metrics(sequential)


def test_failing_job_is_reported_and_others_go_on():
    outcome = run_part(EXPERIMENT, "rate", quick=True, overrides={"fail_seed": "1"})
    failed = outcome.failed_jobs
    assert len(failed) == 2 and all(j.seed == 1 for j in failed)
    assert "fails on purpose" in failed[0].error
    assert len([j for j in outcome.jobs if j.ok]) == 2
    assert not outcome.passed  # a failed job makes the part fail


def test_failing_claim_fails_the_part():
    outcome = run_part(EXPERIMENT, "rate", quick=True,
                       overrides={"include_failing_claim": "true"})
    assert [c.passed for c in outcome.result.claims] == [True, False]
    assert not outcome.passed


def test_all_jobs_failing_yields_a_failed_claim_not_a_crash():
    outcome = run_part(EXPERIMENT, "rate", quick=True, seeds=1, overrides={"fail_seed": "0"})
    assert not outcome.passed and outcome.result.claims[0].name == "all jobs"


def test_seed_count_extends_from_first_default_seed():
    part = EXPERIMENT.part("rate")
    assert resolve_seeds(part, quick=True, n_seeds=None) == [0, 1]
    assert resolve_seeds(part, quick=False, n_seeds=5) == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="seeds"):
        resolve_seeds(part, quick=True, n_seeds=0)


def test_jobs_below_one_is_rejected():
    with pytest.raises(ValueError, match="jobs"):
        run_experiment(EXPERIMENT, quick=True, jobs=0)


def test_claims_by_name_raises_with_the_failing_traceback():
    outcome = run_part(EXPERIMENT, "rate", quick=True, overrides={"fail_seed": "1"})
    with pytest.raises(RuntimeError, match="fails on purpose"):
        outcome.claims_by_name()
    ok = run_part(EXPERIMENT, "rate", quick=True)
    assert list(ok.claims_by_name()) == ["log-log slope of error in n"]
