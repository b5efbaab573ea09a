"""RACER: risk-controlled, set-valued routing of queries to LLMs, with an abstain option.

A base router gives each query a score ``r_k(x) in [0, 1]`` per candidate model. RACER adds
a null option 0 ("abstain") with score ``r_0(x)``, scores every augmented option by a
non-conformity score ``s(x, k)`` (smaller = more plausible), and returns the nested sets
``C_lambda(x) = {k in {0..K} : s(x, k) <= lambda}`` with one global threshold calibrated so
that the misrouting risk ``P(C(X) contains no correct option) <= alpha``.

References
----------
Hao, Zeng, Wei, Jing. "RACER: Risk-Aware Calibrated Efficient Routing for Large Language
Models", arXiv:2603.06616, 2026.
Angelopoulos et al. "Conformal Risk Control", ICLR 2024 (the ``crc`` rule).
Bates et al. "Distribution-Free, Risk-Controlling Prediction Sets", JACM 2021 (the
Hoeffding-Bentkus bound ``hb``).
"""

from __future__ import annotations

import math
import numbers
import warnings

import numpy as np
from scipy import stats
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from icml26.core.validation import check_choice, check_matrix, check_probability, check_scalar_in

__all__ = ["RACERCalibrator", "RACER", "InfeasibleRiskWarning", "augment_scores",
           "nonconformity_scores", "threshold_levels", "crc_threshold", "pac_threshold",
           "risk_p_values", "min_calibration_size", "set_metrics", "SCORES", "NULL_MODES",
           "BOUNDS"]

SCORES = ("gap", "one_minus_prob")
NULL_MODES = ("one_minus_max", "mean_prob", "median_prob", "static_score")
BOUNDS = ("crc", "hoeffding", "binomial", "hb")
_SOFTMAX_DOMINANCE_SHARE = 0.9  # warn when the null option tops this share of calibration rows
_CEIL_SLACK = 1e-9  # guards ceil((n + 1)(1 - alpha)) against floating-point round-up


class InfeasibleRiskWarning(UserWarning):
    """The calibration set is too small for the requested risk level: every option is returned.

    References
    ----------
    Hao, Zeng, Wei & Jing, "RACER: Risk-Aware Calibrated Efficient Routing for Large Language
    Models", arXiv:2603.06616, 2026. A ``UserWarning`` subclass, as scikit-learn's
    ``ConvergenceWarning``.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from icml26.racer import InfeasibleRiskWarning, RACERCalibrator
    >>> rng = np.random.default_rng(0)
    >>> scores = rng.random((5, 2)); correct = (rng.random((5, 2)) < scores).astype(int)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     cal = RACERCalibrator(alpha=0.01).fit(scores, correct)   # 5 queries: too few
    >>> any(w.category is InfeasibleRiskWarning for w in caught)
    True
    """


def augment_scores(scores, null: str = "one_minus_max", null_constant: float = 0.5) -> np.ndarray:
    """Prepend the null ("abstain") option's score to the router scores.

    Parameters
    ----------
    scores : array of shape (n, K)
        Router scores of the K models.
    null : {"one_minus_max", "mean_prob", "median_prob", "static_score"}
        ``r_0 = 1 - max_k r_k`` (paper code's default), ``mean_k r_k``, ``median_k r_k``, or the
        constant ``null_constant``. The last three are our resolution (definitions not visible).
    null_constant : float
        The constant of ``static_score``.

    Returns
    -------
    ndarray of shape (n, K + 1)
        Column 0 is the null option, columns 1..K the models.

    Examples
    --------
    >>> augment_scores([[0.2, 0.7]]).round(2).tolist()
    [[0.3, 0.2, 0.7]]
    """
    scores = np.asarray(scores, dtype=float)
    check_choice(null, "null", NULL_MODES)
    if null == "one_minus_max":
        r0 = 1.0 - scores.max(axis=1)
    elif null == "mean_prob":
        r0 = scores.mean(axis=1)
    elif null == "median_prob":
        r0 = np.median(scores, axis=1)
    else:
        r0 = np.full(scores.shape[0], float(null_constant))
    return np.column_stack([r0, scores])


def nonconformity_scores(augmented, score: str = "gap") -> np.ndarray:
    """Non-conformity of every option (smaller = more plausible).

    ``gap``: ``s(x, k) = max_j r_j(x) - r_k(x)``; ``one_minus_prob``: ``s(x, k) = 1 - r_k(x)``.

    Examples
    --------
    >>> nonconformity_scores([[0.3, 0.2, 0.7]]).round(2).tolist()
    [[0.4, 0.5, 0.0]]
    """
    augmented = np.asarray(augmented, dtype=float)
    check_choice(score, "score", SCORES)
    if score == "gap":
        return augmented.max(axis=1, keepdims=True) - augmented
    return 1.0 - augmented


def threshold_levels(nonconformity, good) -> np.ndarray:
    """``l_i = min_{k in G+_i} s(x_i, k)``: the smallest threshold whose set covers a good option.

    The loss is ``L_i(lambda) = 1{l_i > lambda}``; rows without a good option get ``+inf``.
    """
    return np.where(good, nonconformity, np.inf).min(axis=1)


def min_calibration_size(alpha: float, bound: str = "crc", delta: float = 0.1) -> int:
    """Smallest calibration size for which a finite threshold can exist.

    ``crc``: ``ceil((n + 1)(1 - alpha)) <= n``, i.e. ``n >= ceil(1/alpha) - 1``. The PAC
    bounds need their p-value at zero empirical risk to be ``<= delta``:
    ``hoeffding``: ``n >= log(1/delta) / (2 alpha^2)``; ``binomial`` and ``hb``:
    ``(1 - alpha)^n <= delta``.

    Examples
    --------
    >>> min_calibration_size(0.1)
    9
    """
    alpha = check_probability(alpha, "alpha")
    delta = check_probability(delta, "delta")
    check_choice(bound, "bound", BOUNDS)
    if bound == "crc":
        return max(1, math.ceil((1.0 - alpha) / alpha - _CEIL_SLACK))
    if bound == "hoeffding":
        return math.ceil(math.log(1.0 / delta) / (2.0 * alpha ** 2) - _CEIL_SLACK)
    return math.ceil(math.log(delta) / math.log(1.0 - alpha) - _CEIL_SLACK)


def _check_levels(levels) -> np.ndarray:
    """A non-empty 1-D float array without NaN (``+inf`` is a level: no good option, #33)."""
    try:
        levels = np.asarray(levels, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError("levels must be an array of real numbers") from exc
    if levels.ndim != 1 or levels.size == 0:
        raise ValueError(f"levels must be a non-empty 1-D array, got shape {levels.shape}")
    if np.isnan(levels).any() or np.isneginf(levels).any():
        raise ValueError("levels contains NaN or -inf; expected real levels (+inf: no good option)")
    return levels


def crc_threshold(levels, alpha: float) -> float:
    """Conformal-risk-control threshold ``l_(ceil((n+1)(1-alpha)))`` (``+inf`` if that index > n).

    Equals ``min{l_(j) : (#{i : l_i > l_(j)} + 1)/(n + 1) <= alpha}``; guarantees
    ``E[L_{n+1}(lambda)] <= alpha`` for exchangeable data. O(n) (a partition, no full sort).

    Examples
    --------
    >>> crc_threshold(np.arange(1.0, 101.0), 0.1)   # index ceil(101 * 0.9) = 91
    91.0
    """
    levels = _check_levels(levels)
    n = levels.shape[0]
    index = math.ceil((n + 1) * (1.0 - alpha) - _CEIL_SLACK)
    if index > n:
        return math.inf
    return float(np.partition(levels, index - 1)[index - 1])


def risk_p_values(losses_count, n: int, alpha: float, bound: str = "hb") -> np.ndarray:
    """p-values of ``H0: R(lambda) > alpha`` from ``n * R_hat = losses_count`` losses out of n.

    ``hoeffding``: ``exp(-2 n (alpha - R_hat)_+^2)`` (rejects iff ``R_hat + sqrt(log(1/delta)/(2n))
    <= alpha``); ``binomial``: ``P(Bin(n, alpha) <= n R_hat)`` (rejects iff the Clopper-Pearson
    upper bound ``<= alpha``); ``hb``: ``min(exp(-n h(min(R_hat, alpha), alpha)),
    e * P(Bin(n, alpha) <= n R_hat))`` with ``h`` the Bernoulli KL divergence.
    """
    check_choice(bound, "bound", BOUNDS[1:])
    k = np.asarray(losses_count, dtype=float)
    r_hat = k / n
    if bound == "hoeffding":
        return np.exp(-2.0 * n * np.clip(alpha - r_hat, 0.0, None) ** 2)
    binom = stats.binom.cdf(k, n, alpha)
    if bound == "binomial":
        return binom
    a = np.minimum(r_hat, alpha)
    with np.errstate(divide="ignore", invalid="ignore"):
        kl = (np.where(a > 0, a * np.log(a / alpha), 0.0)
              + np.where(a < 1, (1 - a) * np.log((1 - a) / (1 - alpha)), 0.0))
    return np.minimum(np.exp(-n * kl), math.e * binom)


def pac_threshold(levels, alpha: float, delta: float, bound: str = "hb") -> float:
    """(alpha, delta) risk-controlling threshold by fixed-sequence testing.

    Candidates ``lambda`` run over the sorted levels from large to small; the loss is
    monotone in ``lambda`` so testing in that order needs no multiplicity correction.
    Keeps the last candidate whose p-value is ``<= delta``; guarantees
    ``P(R(lambda_hat) <= alpha) >= 1 - delta``. ``+inf`` when even the largest level fails.
    O(n log n) (one sort).
    """
    levels = np.sort(_check_levels(levels))
    n = levels.shape[0]
    counts = np.arange(n + 1)  # lambda = levels[n - 1 - c] has at most c levels above it
    rejected = risk_p_values(counts, n, alpha, bound) <= delta
    first_fail = int(np.argmin(rejected)) if not rejected.all() else n + 1
    if first_fail == 0:
        return math.inf
    return float(levels[n - first_fail])


class RACERCalibrator(BaseEstimator):
    """RACER: turn any router's scores into risk-controlled model sets with abstention.

    Parameters
    ----------
    alpha : float
        Target misrouting risk in (0, 1).
    score : {"gap", "one_minus_prob"}
        Non-conformity score on the augmented options.
    null : {"one_minus_max", "mean_prob", "median_prob", "static_score"}
        Score of the null (abstain) option; see :func:`augment_scores`.
    augment : bool
        Add the null option. Without it, queries no model answers can never be covered and
        the calibration is infeasible when their share exceeds ``alpha``.
    bound : {"crc", "hoeffding", "binomial", "hb"}
        ``crc`` (default, the paper code's conformal rule: marginal guarantee) or a PAC bound
        (guarantee ``P(risk <= alpha) >= 1 - delta``).
    delta : float
        Confidence level of the PAC bounds.
    tie_noise : float
        Width ``xi`` of the ``U[0, xi]`` noise added to every non-conformity score.
    null_constant : float
        The constant of ``null="static_score"``.
    allow_unbounded : bool
        Accept scores outside [0, 1] (only with ``score="gap"``, which needs only their order).
    random_state : int, RandomState or None
        Seed of the tie-breaking noise. With an int, the noise of ``fit`` and of each
        prediction call is drawn afresh from that seed, so repeated calls agree.

    Attributes
    ----------
    lambda_ : float
        Calibrated threshold (``inf``: every option is returned).
    threshold_ : float
        Alias of ``lambda_``.
    calibration_risk_ : float
        Empirical risk of ``lambda_`` on the calibration set.
    n_calibration_ : int
        Number of calibration queries.
    n_models_ : int
        K, the number of candidate models.
    unanswerable_share_ : float
        Share of calibration queries that no model answers correctly.

    Notes
    -----
    Paper notation -> code: ``r(x)`` = ``scores``, ``Y`` = ``correct``, ``G+`` (good set with
    the null option standing for "no model is correct"), ``s(x, k)`` =
    :func:`nonconformity_scores`, ``l_i = min_{k in G+_i} s(x_i, k)`` =
    :func:`threshold_levels`, ``L_i(lambda) = 1{l_i > lambda}``. ``crc``:
    ``lambda_hat = l_(ceil((n+1)(1-alpha)))``; PAC: :func:`pac_threshold`. The PAC bounds
    (``hoeffding``, ``binomial``, ``hb``) are our resolution of the abstract's
    "finite-sample concentration bounds" (the paper's theorem could not be read).

    References
    ----------
    Hao, Zeng, Wei, Jing. "RACER: Risk-Aware Calibrated Efficient Routing for Large Language
    Models", arXiv:2603.06616, 2026.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> scores = rng.random((500, 3)); correct = (rng.random((500, 3)) < scores).astype(int)
    >>> cal = RACERCalibrator(alpha=0.1, random_state=0).fit(scores, correct)
    >>> sets = cal.predict_sets(scores)          # (500, 4) bool; column 0 = abstain
    >>> round(cal.evaluate(scores, correct)["risk"], 2) <= 0.11
    True
    """

    def __init__(self, alpha: float = 0.1, score: str = "gap", null: str = "one_minus_max",
                 augment: bool = True, bound: str = "crc", delta: float = 0.1,
                 tie_noise: float = 1e-6, null_constant: float = 0.5,
                 allow_unbounded: bool = False, random_state=None):
        self.alpha = alpha
        self.score = score
        self.null = null
        self.augment = augment
        self.bound = bound
        self.delta = delta
        self.tie_noise = tie_noise
        self.null_constant = null_constant
        self.allow_unbounded = allow_unbounded
        self.random_state = random_state

    # -- validation ---------------------------------------------------------------------
    def _check_params(self) -> None:
        check_probability(self.alpha, "alpha")
        check_probability(self.delta, "delta")
        check_choice(self.score, "score", SCORES)
        check_choice(self.null, "null", NULL_MODES)
        check_choice(self.bound, "bound", BOUNDS)
        check_scalar_in(self.tie_noise, "tie_noise", low=0.0)
        check_scalar_in(self.null_constant, "null_constant")
        if self.allow_unbounded and self.score != "gap":
            raise ValueError(f"allow_unbounded=True needs score='gap' (which only uses the order "
                             f"of the scores), got score={self.score!r}")

    def _check_scores(self, scores, name: str) -> np.ndarray:
        scores = check_matrix(scores, name)
        if not self.allow_unbounded and (scores.min() < 0.0 or scores.max() > 1.0):
            raise ValueError(f"{name} must be probabilities in [0, 1], got values in "
                             f"[{scores.min():.4g}, {scores.max():.4g}] (pass allow_unbounded=True "
                             f"with score='gap' for unbounded router scores)")
        return scores

    def _check_correct(self, correct, scores: np.ndarray, name: str = "correct") -> np.ndarray:
        correct = check_matrix(correct, name)
        if correct.shape != scores.shape:
            raise ValueError(f"{name} has shape {correct.shape} but scores has shape "
                             f"{scores.shape}; expected one 0/1 label per (query, model)")
        if not np.isin(correct, (0.0, 1.0)).all():
            raise ValueError(f"{name} must be binary (0/1 or bool): 1 iff the model answered "
                             f"correctly; got values {np.unique(correct)[:5].tolist()}")
        return correct.astype(bool)

    def _noise(self, shape, stage: int) -> np.ndarray:
        if self.tie_noise == 0:
            return np.zeros(shape)
        rs = self.random_state
        if isinstance(rs, numbers.Integral) and not isinstance(rs, bool):
            rng = np.random.default_rng([int(rs), stage])
            return rng.uniform(0.0, self.tie_noise, size=shape)
        if isinstance(rs, (np.random.RandomState, np.random.Generator)):
            return rs.uniform(0.0, self.tie_noise, size=shape)
        if rs is None:
            return np.random.default_rng().uniform(0.0, self.tie_noise, size=shape)
        raise TypeError(f"random_state must be None, an int, a RandomState or a Generator, "
                        f"got {rs!r}")

    def _nonconformity(self, scores: np.ndarray, stage: int) -> np.ndarray:
        augmented = augment_scores(scores, self.null, self.null_constant)
        s = nonconformity_scores(augmented, self.score)
        if not self.augment:
            s[:, 0] = np.inf  # the null option is never in the set
        return s + self._noise(s.shape, stage)

    def _good(self, correct: np.ndarray) -> np.ndarray:
        none_correct = ~correct.any(axis=1)
        null_good = none_correct if self.augment else np.zeros_like(none_correct)
        return np.column_stack([null_good, correct])

    # -- estimator API --------------------------------------------------------------------
    def fit(self, scores, correct):
        """Calibrate the threshold on held-out queries.

        Parameters
        ----------
        scores : array of shape (n, K)
            Router scores in [0, 1] of the calibration queries.
        correct : array of shape (n, K)
            ``correct[i, k] = 1`` iff model k answers query i correctly.

        Returns
        -------
        self
        """
        self._check_params()
        scores = self._check_scores(scores, "scores")
        correct = self._check_correct(correct, scores)
        n, k = scores.shape
        s = self._nonconformity(scores, stage=0)
        levels = threshold_levels(s, self._good(correct))
        if self.bound == "crc":
            lam = crc_threshold(levels, self.alpha)
        else:
            lam = pac_threshold(levels, self.alpha, self.delta, self.bound)
        self.unanswerable_share_ = float((~correct.any(axis=1)).mean())
        if math.isinf(lam):
            needed = min_calibration_size(self.alpha, self.bound, self.delta)
            if n < needed:
                warnings.warn(
                    f"n_calibration={n} is too small for alpha={self.alpha:g} with bound="
                    f"{self.bound!r}: at least {needed} calibration queries are needed; "
                    f"returning every option (lambda = inf)", InfeasibleRiskWarning, stacklevel=2)
            elif not self.augment:
                raise ValueError(
                    f"augment=False is infeasible at alpha={self.alpha:g}: "
                    f"{self.unanswerable_share_:.3f} of the calibration queries have no correct "
                    f"model and can never be covered; use augment=True or alpha > that share")
        if self.augment:
            null_score = augment_scores(scores, self.null, self.null_constant)[:, 0]
            dominance = float((null_score > scores.max(axis=1)).mean())
            if dominance > _SOFTMAX_DOMINANCE_SHARE:
                warnings.warn(
                    f"the null option scores above every model on {dominance:.0%} of the "
                    f"calibration queries (typical of softmax scores over many models): it will "
                    f"be in nearly every set and abstentions will hit answerable queries; "
                    f"prefer per-model success probabilities", UserWarning, stacklevel=2)
        self.lambda_ = float(lam)
        self.threshold_ = self.lambda_
        self.calibration_risk_ = float((levels > lam).mean())
        self.n_calibration_ = int(n)
        self.n_models_ = int(k)
        return self

    def _check_predict(self, scores) -> np.ndarray:
        check_is_fitted(self, "lambda_")
        scores = self._check_scores(scores, "scores")
        if scores.shape[1] != self.n_models_:
            raise ValueError(f"scores has {scores.shape[1]} columns but the calibrator was fitted "
                             f"with K={self.n_models_} models")
        return scores

    def predict_sets(self, scores) -> np.ndarray:
        """Nested sets ``C(x) = {k : s(x, k) <= lambda_}`` as a boolean mask.

        Returns
        -------
        ndarray of bool, shape (n, K + 1)
            Column 0 is the null (abstain) option, column k the k-th model.
        """
        scores = self._check_predict(scores)
        return self._nonconformity(scores, stage=1) <= self.lambda_

    def predict_routes(self, scores) -> list:
        """The models each query is routed to (null option removed); empty array = abstain."""
        sets = self.predict_sets(scores)[:, 1:]
        return [np.flatnonzero(row) for row in sets]

    def evaluate(self, scores, correct) -> dict:
        """Risk and efficiency of the calibrated sets on labelled test queries.

        Returns
        -------
        dict
            ``risk`` (share of queries whose set holds no good option), ``coverage`` = 1 - risk,
            ``set_size`` (mean number of routed models), ``abstention_rate``,
            ``correct_abstention_rate`` (share of abstentions where no model is correct; NaN
            without abstentions), ``base_accuracy`` (top-1 model correct).
        """
        scores = self._check_predict(scores)
        correct = self._check_correct(correct, scores)
        sets = self._nonconformity(scores, stage=1) <= self.lambda_
        return set_metrics(sets, correct, scores)


def set_metrics(sets: np.ndarray, correct: np.ndarray, scores: np.ndarray) -> dict:
    """Metrics of (n, K + 1) sets against (n, K) correctness (null good iff no model correct)."""
    correct = np.asarray(correct, dtype=bool)
    unanswerable = ~correct.any(axis=1)
    good = np.column_stack([unanswerable, correct])
    risk = float((~(sets & good).any(axis=1)).mean())
    routed = sets[:, 1:].sum(axis=1)
    abstained = routed == 0
    correct_abst = float(unanswerable[abstained].mean()) if abstained.any() else float("nan")
    top1 = np.asarray(scores).argmax(axis=1)
    return {"risk": risk, "coverage": 1.0 - risk, "set_size": float(routed.mean()),
            "abstention_rate": float(abstained.mean()), "correct_abstention_rate": correct_abst,
            "base_accuracy": float(correct[np.arange(len(top1)), top1].mean())}


RACER = RACERCalibrator
"""Alias: the name used in the issue (``RACER(...).fit(router_scores_cal, correct_cal)``)."""

