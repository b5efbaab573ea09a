"""Every part's quick config through the runner; claims present, meaningful quick bars pass.

The closed-loop parts use a small policy (few demonstrations and training steps) so the test
stays fast; with it the competence-dependent bars (calibration, RCD trade-off, α trend) are
not meaningful and are only checked for presence. The guarantees (HCD/Filter/Reject 100 %
satisfaction, RCD α = 0 bit-for-bit, exact-enumeration bars) hold for any policy and are
asserted.
"""

import pytest

from icml26.core.runner import run_part
from icml26.safedec.experiment import EXPERIMENT

SMALL = {"episodes": "8", "n_demos": "60", "train_steps": "40"}
MAIN_SMALL = {**SMALL, "dev_episodes": "8", "rcd_betas": "8,16"}


@pytest.fixture(scope="module")
def exp():
    return EXPERIMENT


def test_main_part_quick_guarantees_hold(exp):
    out = run_part(exp, "main", quick=True, seeds=1,
                   overrides={**MAIN_SMALL, "greedy": "false", "alphas": "5"})
    claims = out.claims_by_name()
    assert len(claims) == 12
    for name in ("E1(b) HCD satisfaction, min over seeds and families (%)",
                 "E1(c) Filter and Reject satisfaction, min (%)",
                 "E1(g) RCD α=0 equals Uncon bit for bit"):
        assert claims[name].passed, (name, claims[name].measured)
    assert "E1 main table (mean ± std over seeds)" in out.result.tables
    # the 40-step policy is not competent: the success-rate comparisons read INCOMPLETE, not FAIL
    competence = claims["E1(a) Uncon SR on free (%)"]
    assert competence.kind == "control" and not competence.passed
    gated = [c for n, c in claims.items() if n.startswith(("E1(d)", "E1(e)"))]
    assert len(gated) == 4
    assert all(c.verdict == "INCOMPLETE" and "not competent" in c.note for c in gated)


def test_sr_claims_keep_their_verdict_when_the_policy_is_competent():
    from icml26.core.experiment import Claim
    from icml26.safedec.experiment import _sr_gated

    claim = Claim.at_least("E1(d) HCD SR − Filter SR, avoid (pts)", -3.0, -1.0)
    assert _sr_gated(claim, "").verdict == "FAIL"
    assert _sr_gated(claim, "base policy not competent").verdict == "INCOMPLETE"


def test_alpha_and_mismatch_parts_quick_structure(exp):
    alpha = run_part(exp, "alpha", quick=True, seeds=1, overrides={**SMALL, "alphas": "0,5,25"})
    assert list(alpha.claims_by_name()) == ["E2 Spearman(α, satisfaction)"]
    mismatch = run_part(exp, "mismatch", quick=True, seeds=1, overrides=SMALL)
    claims = mismatch.claims_by_name()
    assert set(claims) == {"E3 HCD − Uncon satisfaction under mismatch (pts)",
                           "E3 HCD-δ satisfaction under mismatch (%)"}


def test_exact_part_quick_claims_pass(exp):
    out = run_part(exp, "exact", quick=True)
    claims = out.claims_by_name()
    assert len(claims) == 5
    failed = [(c.name, c.measured) for c in claims.values() if not c.passed]
    assert not failed


def test_scaling_part_quick_structure(exp):
    out = run_part(exp, "scaling", quick=True, overrides={"repeats": "3", "steps": "100",
                                                          "n_tokens": "7,28,112", "n_zones": "1,4,16"})
    claims = out.claims_by_name()
    assert len(claims) == 4
    assert all(isinstance(c.measured, float) for c in claims.values())
