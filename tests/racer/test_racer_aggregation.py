"""Vote aggregation: normalisation, weighted vote vs a direct loop, temperature choice, bad input."""

import numpy as np
import pytest

from icml26.racer import aggregate_answers, normalize_answer, select_temperature, weighted_vote
from icml26.racer.aggregation import TEMPERATURE_GRID


@pytest.mark.parametrize("raw, expected", [
    (" $1,000.00. ", "1000"), ("1.0", "1"), (1, "1"), (1.0, "1"), (np.float64(2.5), "2.5"),
    ("B", "b"), ("  Paris. ", "paris"), (None, None), (float("nan"), None), ("", None),
])
def test_normalize_answer(raw, expected):
    assert normalize_answer(raw) == expected


def _vote_by_loop(codes, routed, conf, temperature):
    """Weighted vote written out per query."""
    out = []
    for c, r, w in zip(codes, routed, conf):
        idx = [k for k in range(len(c)) if r[k] and c[k] >= 0]
        if not idx:
            out.append(-1)
            continue
        logits = np.array([w[k] / temperature for k in idx])
        weights = np.exp(logits - logits.max())
        weights /= weights.sum()
        totals, means = {}, {}
        for k, wk in zip(idx, weights):
            totals[c[k]] = totals.get(c[k], 0.0) + wk
        for a in totals:
            means[a] = np.mean([w[k] for k in idx if c[k] == a])
        best = max(totals.values())
        tied = [a for a in totals if totals[a] >= best - 1e-12]
        out.append(max(tied, key=lambda a: means[a]))
    return np.array(out)


@pytest.mark.parametrize("temperature", [0.01, 0.3, 1.0, 10.0])
def test_weighted_vote_matches_direct_loop(temperature):
    rng = np.random.default_rng(0)
    codes = rng.integers(-1, 4, size=(300, 5))
    routed = rng.random((300, 5)) < 0.6
    conf = rng.random((300, 5))
    np.testing.assert_array_equal(weighted_vote(codes, routed, conf, temperature),
                                  _vote_by_loop(codes, routed, conf, temperature))


def test_majority_vote_ties_broken_by_higher_mean_router_score():
    codes = np.array([[1, 1, 2, 2]])
    routed = np.ones((1, 4), dtype=bool)
    scores = np.array([[0.1, 0.2, 0.9, 0.3]])
    assert weighted_vote(codes, routed, None, tie_scores=scores)[0] == 2
    assert weighted_vote(codes, routed, None, tie_scores=scores[:, ::-1])[0] == 1


def test_low_temperature_follows_top_scored_model_high_temperature_majority():
    codes = np.array([[7, 3, 3]])
    routed = np.ones((1, 3), dtype=bool)
    conf = np.array([[0.9, 0.5, 0.4]])
    assert weighted_vote(codes, routed, conf, 1e-3)[0] == 7
    assert weighted_vote(codes, routed, conf, 10.0)[0] == 3


def test_select_temperature_matches_brute_force():
    rng = np.random.default_rng(1)
    gold = rng.integers(0, 3, size=400)
    codes = np.where(rng.random((400, 4)) < 0.6, gold[:, None], rng.integers(0, 3, (400, 4)))
    routed = rng.random((400, 4)) < 0.7
    conf = rng.random((400, 4))
    accuracy = [(weighted_vote(codes, routed, conf, t) == gold).mean() for t in TEMPERATURE_GRID]
    assert select_temperature(codes, routed, conf, gold) == TEMPERATURE_GRID[int(np.argmax(accuracy))]


def test_aggregate_answers_normalises_and_abstains():
    answers = [["4", "4.0", "5"], ["a", "b", None], ["x", "y", "z"]]
    sets = np.array([[0, 1, 1, 1], [0, 1, 1, 0], [1, 0, 0, 0]], dtype=bool)
    out = aggregate_answers(answers, sets)
    assert out.tolist() == ["4", "a", None]


def test_aggregate_answers_accepts_routes_and_k_column_masks():
    answers = [["4", "4.0", "5"], ["a", "b", "b"]]
    routes = [np.array([0, 2]), np.array([1, 2])]
    weights = np.array([[0.1, 0.2, 0.9], [0.9, 0.1, 0.1]])
    by_routes = aggregate_answers(answers, routes, weights, temperature=0.05)
    by_mask = aggregate_answers(answers, np.array([[1, 0, 1], [0, 1, 1]], dtype=bool), weights,
                                temperature=0.05)
    assert by_routes.tolist() == by_mask.tolist() == ["5", "b"]


def test_missing_answers_never_win():
    out = aggregate_answers([[None, "3"], [None, None]], np.ones((2, 2), dtype=bool),
                            weights=np.array([[0.99, 0.01], [0.5, 0.5]]), temperature=0.001)
    assert out.tolist() == ["3", None]


def test_aggregate_bad_input_raises():
    answers = [["1", "2"]]
    with pytest.raises(ValueError, match="sets must be a list of index arrays or a boolean mask"):
        aggregate_answers(answers, np.ones((1, 5), dtype=bool))
    with pytest.raises(ValueError, match=r"temperature must be in \(0, inf\]"):
        aggregate_answers(answers, [[0]], temperature=0.0)
    with pytest.raises(ValueError, match="weights has shape"):
        aggregate_answers(answers, [[0]], weights=np.ones((1, 3)))
    with pytest.raises(ValueError, match=r"sets\[0\] holds model indices outside 0..1"):
        aggregate_answers(answers, [[4]])
    with pytest.raises(ValueError, match="answers must be a non-empty 2-D array"):
        aggregate_answers(["1", "2"], [[0]])
