"""Synthetic generator, RouteLLM loaders, routers and baselines."""

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from icml26.racer import (ScoreRouter, normalize_answer, TextScoreRouter, load_routellm_gsm8k, load_routellm_mmlu,
                          make_routing_benchmark)
from icml26.racer.baselines import (all_models_sets, best_single_model, naive_quantile_threshold,
                                    threshold_sets, top_k_sets)


def test_benchmark_answers_are_gold_iff_correct_and_deterministic():
    a = make_routing_benchmark(n_queries=3000, seed=3)
    b = make_routing_benchmark(n_queries=3000, seed=3)
    np.testing.assert_array_equal(a.answers, b.answers)
    assert np.array_equal(a.answers == a.gold[:, None], a.Y == 1)
    assert a.X.shape == (3000, 32) and a.Y.shape == (3000, 7) and a.pi.shape == (3000, 7)
    unanswerable = (a.Y.sum(axis=1) == 0).mean()
    assert 0.04 < unanswerable < 0.12  # spec: about 7-8 % queries with no correct model


def test_benchmark_wrong_answers_share_trap():
    data = make_routing_benchmark(n_queries=4000, trap=1.0, seed=0)
    wrong = data.Y == 0
    both_wrong = wrong.sum(axis=1) >= 2
    rows = np.flatnonzero(both_wrong)[:50]
    for i in rows:  # with trap=1 every wrong model gives the same trap answer
        assert len(set(data.answers[i, wrong[i]])) == 1


def test_benchmark_bad_arguments_raise():
    with pytest.raises(ValueError, match="n_models must be >= 1"):
        make_routing_benchmark(n_models=0)
    with pytest.raises(ValueError, match=r"trap must be in \[0, 1\]"):
        make_routing_benchmark(trap=1.5)


def test_load_routellm_mmlu_matches_documented_accuracies():
    data = load_routellm_mmlu()
    assert data.Y.shape == (14042, 2) and len(data.text) == 14042
    np.testing.assert_allclose(data.Y.mean(axis=0), [0.681, 0.806], atol=0.001)
    assert (data.Y.sum(axis=1) == 0).mean() == pytest.approx(0.141, abs=0.001)
    assert len(set(data.subjects)) == 57


def test_load_routellm_gsm8k_extracts_final_answers():
    data = load_routellm_gsm8k()
    assert data.Y.shape == (1319, 2)
    answered = np.array([[a is not None for a in row] for row in data.answers])
    assert answered.mean(axis=0).min() > 0.9
    both_right = (data.Y == 1).all(axis=1)
    agree = np.array([normalize_answer(a) == normalize_answer(b) for a, b in data.answers[both_right]])
    assert agree.mean() > 0.9  # both correct -> both extracted answers equal the gold answer


def test_loader_reads_user_csv_and_rejects_missing_columns(tmp_path):
    good = tmp_path / "mmlu.csv"
    good.write_text("subject,prompt,mistralai/Mixtral-8x7B-Instruct-v0.1,gpt-4-1106-preview\n"
                    "math,What is 1+1?,True,False\n")
    assert load_routellm_mmlu(good).Y.tolist() == [[1, 0]]
    bad = tmp_path / "bad.csv"
    bad.write_text("subject,prompt,gpt-4-1106-preview\nmath,q,True\n")
    with pytest.raises(ValueError, match="missing correctness columns"):
        load_routellm_mmlu(bad)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_routellm_mmlu(tmp_path / "nope.csv")


def test_score_router_outputs_probabilities_and_softmax_rows_sum_to_one():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    Y = np.column_stack([X[:, 0] > 0, X[:, 1] > 0, np.ones(300)]).astype(int)  # last: constant
    sig = ScoreRouter(LogisticRegression(), per_model=True).fit(X, Y).predict_scores(X)
    assert sig.shape == (300, 3) and sig.min() >= 0 and sig.max() <= 1
    assert np.all(sig[:, 2] == 1.0)
    soft = ScoreRouter(LogisticRegression(), per_model=True, output="softmax").fit(X, Y)
    np.testing.assert_allclose(soft.predict_scores(X).sum(axis=1), 1.0)


def test_score_router_rejects_non_binary_labels():
    with pytest.raises(ValueError, match="Y must be binary"):
        ScoreRouter(LogisticRegression(), per_model=True).fit(np.zeros((4, 2)), np.full((4, 2), 2))


def test_text_router_learns_which_model_is_right():
    texts = ["algebra question x"] * 40 + ["history question y"] * 40
    Y = np.array([[1, 0]] * 40 + [[0, 1]] * 40)
    router = TextScoreRouter(ngram_range=(1, 1), min_df=1).fit(texts, Y)
    scores = router.predict_scores(["algebra question", "history question"])
    assert scores[0, 0] > scores[0, 1] and scores[1, 1] > scores[1, 0]


def test_baseline_sets():
    scores = np.array([[0.1, 0.9, 0.5], [0.6, 0.2, 0.4]])
    assert top_k_sets(scores, 1).tolist() == [[False, False, True, False], [False, True, False, False]]
    assert top_k_sets(scores, 2)[:, 1:].sum() == 4
    assert threshold_sets(scores)[:, 1:].tolist() == [[False, True, True], [True, False, False]]
    assert all_models_sets(scores)[:, 1:].all() and not all_models_sets(scores)[:, 0].any()
    assert best_single_model(np.array([[1, 0], [1, 1], [0, 1], [1, 1]]))[0] == 0
    with pytest.raises(ValueError, match="k must be <= 3"):
        top_k_sets(scores, 4)


def test_naive_quantile_uses_index_without_plus_one():
    levels = np.arange(1.0, 101.0)
    assert naive_quantile_threshold(levels, 0.1) == 90.0  # ceil(100 * 0.9); conformal gives 91
