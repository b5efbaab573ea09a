"""RACERCalibrator: thresholds vs direct computation, invariants, and bad input."""

import math
import warnings

import numpy as np
import pytest
from scipy import stats
from sklearn.base import clone

from icml26.racer import RACER, InfeasibleRiskWarning, RACERCalibrator, crc_threshold, pac_threshold
from icml26.racer.calibrator import (augment_scores, min_calibration_size, nonconformity_scores,
                                     risk_p_values, set_metrics, threshold_levels)


def _toy(n=400, k=4, seed=0):
    rng = np.random.default_rng(seed)
    scores = rng.random((n, k))
    correct = (rng.random((n, k)) < scores).astype(int)
    return scores, correct


def _crc_by_definition(levels, alpha):
    """min{l_(j) : (#{i: l_i > l_(j)} + 1)/(n+1) <= alpha}, by brute force."""
    n = len(levels)
    feasible = [v for v in np.sort(levels) if ((levels > v).sum() + 1) / (n + 1) <= alpha]
    return min(feasible) if feasible else math.inf


@pytest.mark.parametrize("alpha", [0.05, 0.1, 0.13, 0.3])
def test_crc_threshold_matches_definition_with_ties(alpha):
    rng = np.random.default_rng(1)
    levels = rng.integers(0, 15, size=137).astype(float)  # many ties
    assert crc_threshold(levels, alpha) == _crc_by_definition(levels, alpha)


def test_crc_threshold_index_is_robust_to_float_rounding():
    # (n + 1)(1 - alpha) = 100 * 0.9 = 90.00000000000001 in floating point: the index is 90
    levels = np.arange(1.0, 100.0)
    assert crc_threshold(levels, 0.1) == 90.0
    assert _crc_by_definition(levels, 0.1) == 90.0


def test_crc_threshold_infinite_when_n_too_small():
    assert crc_threshold(np.arange(8.0), 0.1) == math.inf
    assert crc_threshold(np.arange(9.0), 0.1) == 8.0
    assert min_calibration_size(0.1) == 9


def _pac_by_scan(levels, alpha, delta, p_value):
    """Fixed-sequence testing written out: scan sorted levels from large to small."""
    keep = math.inf
    for lam in np.sort(levels)[::-1]:
        if p_value((levels > lam).sum()) > delta:
            break
        keep = lam
    return keep


@pytest.mark.parametrize("bound", ["hoeffding", "binomial", "hb"])
def test_pac_threshold_matches_sequential_scan(bound):
    n, alpha, delta = 500, 0.15, 0.1
    levels = np.random.default_rng(2).random(n)
    direct = {
        "hoeffding": lambda k: 0.0 if k / n + math.sqrt(math.log(1 / delta) / (2 * n)) <= alpha else 1.0,
        "binomial": lambda k: stats.binom.cdf(k, n, alpha),
        "hb": lambda k: min(math.exp(-n * _kl(min(k / n, alpha), alpha)),
                            math.e * stats.binom.cdf(k, n, alpha)),
    }[bound]
    assert pac_threshold(levels, alpha, delta, bound) == _pac_by_scan(levels, alpha, delta, direct)


def _kl(a, b):
    terms = 0.0 if a == 0 else a * math.log(a / b)
    return terms + (1 - a) * math.log((1 - a) / (1 - b))


def test_binomial_p_value_matches_clopper_pearson_upper_bound():
    n, delta, alpha = 300, 0.1, 0.12
    for k in (10, 25, 36, 50):
        upper = stats.beta.ppf(1 - delta, k + 1, n - k)  # Clopper-Pearson upper bound
        assert (risk_p_values(k, n, alpha, "binomial") <= delta) == (upper <= alpha)


def test_pac_thresholds_are_more_conservative_than_crc():
    levels = np.random.default_rng(3).random(2000)
    crc = crc_threshold(levels, 0.1)
    for bound in ("hoeffding", "binomial", "hb"):
        assert pac_threshold(levels, 0.1, 0.1, bound) >= crc


def test_fit_threshold_equals_crc_on_hand_computed_levels():
    scores, correct = _toy()
    cal = RACERCalibrator(alpha=0.1, tie_noise=0.0).fit(scores, correct)
    s = augment_scores(scores)
    s = s.max(axis=1, keepdims=True) - s                      # gap score
    good = np.column_stack([correct.sum(axis=1) == 0, correct == 1])
    levels = np.where(good, s, np.inf).min(axis=1)
    assert cal.lambda_ == cal.threshold_ == crc_threshold(levels, 0.1)
    assert cal.calibration_risk_ == pytest.approx((levels > cal.lambda_).mean())
    assert cal.n_calibration_ == 400 and cal.n_models_ == 4


def test_gap_nonconformity_and_null_modes():
    scores = np.array([[0.2, 0.7, 0.4]])
    assert augment_scores(scores, "one_minus_max")[0, 0] == pytest.approx(0.3)
    assert augment_scores(scores, "mean_prob")[0, 0] == pytest.approx(1.3 / 3)
    assert augment_scores(scores, "median_prob")[0, 0] == pytest.approx(0.4)
    assert augment_scores(scores, "static_score", 0.25)[0, 0] == 0.25
    s = nonconformity_scores(augment_scores(scores))
    np.testing.assert_allclose(s, [[0.4, 0.5, 0.0, 0.3]])
    np.testing.assert_allclose(nonconformity_scores([[0.3, 0.2]], "one_minus_prob"), [[0.7, 0.8]])
    assert threshold_levels(s, np.array([[False, True, False, True]]))[0] == pytest.approx(0.3)


def test_sets_are_nested_in_alpha():
    scores, correct = _toy(n=1000)
    test_scores, _ = _toy(n=300, seed=1)
    previous = None
    for alpha in (0.3, 0.2, 0.1, 0.05):  # smaller alpha -> larger lambda -> superset
        sets = RACERCalibrator(alpha=alpha, random_state=0).fit(scores, correct).predict_sets(test_scores)
        if previous is not None:
            assert np.all(previous <= sets)
        previous = sets


def test_risk_is_controlled_on_exchangeable_data():
    rng = np.random.default_rng(4)
    risks = []
    for split in range(200):
        scores = rng.random((300, 3))
        correct = (rng.random((300, 3)) < scores).astype(int)
        cal = RACERCalibrator(alpha=0.1, random_state=split).fit(scores[:100], correct[:100])
        risks.append(cal.evaluate(scores[100:], correct[100:])["risk"])
    assert 0.1 - 1 / 101 - 0.01 <= np.mean(risks) <= 0.1 + 0.006


def test_evaluate_matches_direct_computation():
    scores, correct = _toy()
    cal = RACERCalibrator(alpha=0.2, random_state=0).fit(scores, correct)
    sets = cal.predict_sets(scores)
    metrics = cal.evaluate(scores, correct)
    unanswerable = correct.sum(axis=1) == 0
    covered = [(sets[i, 0] and unanswerable[i]) or np.any(sets[i, 1:] & (correct[i] == 1))
               for i in range(len(scores))]
    routed = sets[:, 1:].sum(axis=1)
    assert metrics["risk"] == pytest.approx(1 - np.mean(covered))
    assert metrics["set_size"] == pytest.approx(routed.mean())
    assert metrics["abstention_rate"] == pytest.approx((routed == 0).mean())
    assert metrics["correct_abstention_rate"] == pytest.approx(unanswerable[routed == 0].mean())
    assert metrics["base_accuracy"] == pytest.approx(correct[np.arange(400), scores.argmax(1)].mean())
    assert metrics == set_metrics(sets, correct, scores)


def test_predict_routes_drops_null_and_empty_means_abstain():
    scores, correct = _toy()
    cal = RACERCalibrator(alpha=0.3, random_state=0).fit(scores, correct)
    sets = cal.predict_sets(scores)
    routes = cal.predict_routes(scores)
    for row, route in zip(sets, routes):
        np.testing.assert_array_equal(route, np.flatnonzero(row[1:]))
    assert any(len(r) == 0 for r in routes)  # abstentions occur at alpha = 0.3


def test_int_random_state_makes_predictions_repeatable():
    scores, correct = _toy()
    cal = RACERCalibrator(alpha=0.1, random_state=3).fit(scores, correct)
    np.testing.assert_array_equal(cal.predict_sets(scores), cal.predict_sets(scores))
    assert RACERCalibrator(alpha=0.1, random_state=3).fit(scores, correct).lambda_ == cal.lambda_


def test_sklearn_conventions_and_alias():
    cal = RACER(alpha=0.2, bound="hb")
    assert RACER is RACERCalibrator
    assert clone(cal).get_params() == cal.get_params()
    scores, correct = _toy()
    assert cal.fit(scores, correct) is cal


def test_hb_bound_gives_larger_sets_than_crc():
    scores, correct = _toy(n=2000)
    crc = RACERCalibrator(alpha=0.1, random_state=0).fit(scores, correct)
    hb = RACERCalibrator(alpha=0.1, bound="hb", random_state=0).fit(scores, correct)
    assert hb.lambda_ >= crc.lambda_
    assert hb.calibration_risk_ <= crc.calibration_risk_


def test_unbounded_gap_scores_allowed_only_when_asked():
    scores, correct = _toy()
    logits = np.log(scores / (1 - scores))
    with pytest.raises(ValueError, match=r"scores must be probabilities in \[0, 1\]"):
        RACERCalibrator().fit(logits, correct)
    cal = RACERCalibrator(allow_unbounded=True, null="static_score", null_constant=0.0,
                          random_state=0).fit(logits, correct)
    assert np.isfinite(cal.lambda_)
    with pytest.raises(ValueError, match="allow_unbounded=True needs score='gap'"):
        RACERCalibrator(allow_unbounded=True, score="one_minus_prob").fit(scores, correct)


# -- warnings and infeasibility ------------------------------------------------------------

def test_too_small_calibration_set_warns_with_needed_size_and_returns_everything():
    scores, correct = _toy(n=5)
    with pytest.warns(InfeasibleRiskWarning, match="at least 9 calibration queries"):
        cal = RACERCalibrator(alpha=0.1).fit(scores, correct)
    assert cal.lambda_ == math.inf
    assert cal.predict_sets(scores).all()


def test_pac_too_small_calibration_set_names_its_size():
    scores, correct = _toy(n=15)
    needed = math.ceil(math.log(0.1) / math.log(0.9))
    with pytest.warns(InfeasibleRiskWarning, match=f"at least {needed} calibration"):
        RACERCalibrator(alpha=0.1, bound="hb").fit(scores, correct)


def test_without_null_option_infeasible_alpha_raises_with_share():
    scores, correct = _toy(n=500)
    correct[:100] = 0  # >= 20 % unanswerable
    share = (correct.sum(axis=1) == 0).mean()
    with pytest.raises(ValueError, match=f"augment=False is infeasible.*{share:.3f}"):
        RACERCalibrator(alpha=0.1, augment=False).fit(scores, correct)
    cal = RACERCalibrator(alpha=0.1, augment=True, random_state=0).fit(scores, correct)
    assert np.isfinite(cal.lambda_)


def test_without_null_option_never_abstains_via_null_column():
    scores, correct = _toy(n=500)
    cal = RACERCalibrator(alpha=0.3, augment=False, random_state=0).fit(scores, correct)
    assert not cal.predict_sets(scores)[:, 0].any()


def test_softmax_scores_over_many_models_warn_that_null_dominates():
    rng = np.random.default_rng(5)
    raw = rng.random((300, 7))
    soft = raw / raw.sum(axis=1, keepdims=True)
    correct = (rng.random((300, 7)) < 0.6).astype(int)
    with pytest.warns(UserWarning, match="null option scores above every model"):
        RACERCalibrator(alpha=0.1).fit(soft, correct)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        RACERCalibrator(alpha=0.1).fit(raw, correct)  # per-model probabilities: no warning


# -- bad input -------------------------------------------------------------------------------

@pytest.mark.parametrize("alpha", [0.0, 1.0, -0.1, 1.5])
def test_alpha_outside_open_unit_interval_raises(alpha):
    scores, correct = _toy()
    with pytest.raises(ValueError, match=r"alpha must be in \(0, 1\)"):
        RACERCalibrator(alpha=alpha).fit(scores, correct)


def test_delta_outside_open_unit_interval_raises():
    scores, correct = _toy()
    with pytest.raises(ValueError, match=r"delta must be in \(0, 1\)"):
        RACERCalibrator(bound="hb", delta=1.0).fit(scores, correct)


@pytest.mark.parametrize("bad", [1.2, -0.01])
def test_scores_outside_unit_interval_raise(bad):
    scores, correct = _toy()
    scores[3, 1] = bad
    with pytest.raises(ValueError, match=r"scores must be probabilities in \[0, 1\]"):
        RACERCalibrator().fit(scores, correct)


def test_shape_mismatch_between_scores_and_labels_raises():
    scores, correct = _toy()
    with pytest.raises(ValueError, match=r"correct has shape \(400, 3\) but scores has shape \(400, 4\)"):
        RACERCalibrator().fit(scores, correct[:, :3])
    with pytest.raises(ValueError, match="correct has shape"):
        RACERCalibrator().fit(scores, correct[:10])


def test_non_binary_labels_raise():
    scores, correct = _toy()
    with pytest.raises(ValueError, match="correct must be binary"):
        RACERCalibrator().fit(scores, correct * 2)


def test_nan_scores_raise():
    scores, correct = _toy()
    scores[0, 0] = np.nan
    with pytest.raises(ValueError, match="scores contains NaN or infinity"):
        RACERCalibrator().fit(scores, correct)


def test_empty_calibration_set_raises():
    with pytest.raises(ValueError, match="scores"):
        RACERCalibrator().fit(np.empty((0, 3)), np.empty((0, 3)))


def test_unknown_options_raise():
    scores, correct = _toy()
    for kwargs, name in (({"score": "rank"}, "score"), ({"null": "max"}, "null"),
                         ({"bound": "wsr"}, "bound")):
        with pytest.raises(ValueError, match=f"{name} must be one of"):
            RACERCalibrator(**kwargs).fit(scores, correct)


def test_predict_before_fit_raises():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        RACERCalibrator().predict_sets(np.full((2, 3), 0.5))


def test_predict_with_other_number_of_models_raises():
    scores, correct = _toy()
    cal = RACERCalibrator(random_state=0).fit(scores, correct)
    with pytest.raises(ValueError, match="scores has 3 columns but the calibrator was fitted with K=4"):
        cal.predict_sets(scores[:, :3])


# -- competitors: calibrated top-k and the matched-size top-k -------------------------------

def test_calibrated_top_k_controls_risk_and_matches_the_crc_rule():
    from icml26.racer.baselines import CalibratedTopK

    rng = np.random.default_rng(3)
    scores = rng.random((20_000, 5))
    correct = (rng.random((20_000, 5)) < scores).astype(int)
    cal, test = slice(0, 10_000), slice(10_000, None)
    top = CalibratedTopK(alpha=0.1, random_state=0).fit(scores[cal], correct[cal])
    # direct computation of the level l_i = r_i + 1 - u_i and its conformal quantile
    rank = np.argsort(np.argsort(-scores[cal], axis=1), axis=1)
    best = np.where(correct[cal] > 0, rank, np.inf).min(axis=1)
    u = np.random.default_rng([0, 0]).random(10_000)
    assert top.lambda_ == pytest.approx(crc_threshold(best + 1 - u, 0.1))
    sets = top.predict_sets(scores[test])
    risk = set_metrics(sets, correct[test], scores[test])["risk"]
    assert abs(risk - 0.1) < 0.015
    size = sets[:, 1:].sum(axis=1)
    assert set(np.unique(size)) <= {int(np.floor(top.lambda_)), int(np.floor(top.lambda_)) + 1}
    assert size.mean() == pytest.approx(top.lambda_, abs=0.02)


def test_calibrated_top_k_is_all_models_below_the_unanswerable_share():
    from icml26.racer.baselines import CalibratedTopK

    rng = np.random.default_rng(0)
    scores = rng.random((500, 3))
    correct = np.zeros((500, 3), dtype=int)
    correct[:400, 0] = 1                                   # 20 % unanswerable
    top = CalibratedTopK(alpha=0.1, random_state=0).fit(scores, correct)
    assert math.isinf(top.lambda_)
    assert top.predict_sets(scores)[:, 1:].all()


def test_calibrated_top_k_bad_inputs():
    from icml26.racer.baselines import CalibratedTopK

    with pytest.raises(ValueError, match="alpha"):
        CalibratedTopK(alpha=1.5).fit(np.random.rand(10, 2), np.ones((10, 2)))
    with pytest.raises(ValueError, match="shape"):
        CalibratedTopK().fit(np.random.rand(10, 2), np.ones((10, 3)))
    fitted = CalibratedTopK(random_state=0).fit(np.random.rand(50, 2), np.ones((50, 2)))
    with pytest.raises(ValueError, match="K=2"):
        fitted.predict_sets(np.random.rand(5, 3))


def test_mixed_top_k_has_the_requested_mean_size():
    from icml26.racer.baselines import mixed_top_k_sets

    scores = np.random.default_rng(1).random((10_000, 7))
    sets = mixed_top_k_sets(scores, 3.4, random_state=0)
    size = sets[:, 1:].sum(axis=1)
    assert set(np.unique(size)) == {3, 4} and size.mean() == pytest.approx(3.4, abs=0.02)
    # the routed models are the best-scored ones
    order = np.argsort(-scores, axis=1)
    assert all(sets[i, 1 + order[i, :size[i]]].all() for i in range(100))
    with pytest.raises(ValueError, match="mean_size"):
        mixed_top_k_sets(scores, 8.0)
