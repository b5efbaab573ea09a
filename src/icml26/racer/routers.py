"""Base routers: per-model probability that each candidate LLM answers a query correctly.

RACER is post-hoc: it works on any router's scores. These are the routers of our
experiments (the paper's RouterDC / MLP / KNN routers need a GPU text encoder; see README).

References
----------
Hao, Zeng, Wei, Jing. "RACER: Risk-Aware Calibrated Efficient Routing for Large Language
Models", arXiv:2603.06616, 2026.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier
from sklearn.utils.validation import check_is_fitted

from icml26.core.validation import check_choice, check_matrix, check_same_length

__all__ = ["ScoreRouter", "TextScoreRouter", "mlp_router", "OUTPUTS"]

OUTPUTS = ("sigmoid", "softmax")


class ScoreRouter(BaseEstimator):
    """Multi-output router: ``fit(X, Y)`` then ``predict_scores(X)`` -> (n, K) scores in [0, 1].

    Parameters
    ----------
    estimator : sklearn classifier, optional
        Probabilistic classifier. Default: ``MLPClassifier((64,), max_iter=300,
        random_state=0)`` fitted natively on the multi-label Y (spec §5).
    per_model : bool
        Fit one clone of ``estimator`` per model column (e.g. logistic regression) instead of
        one multi-label fit.
    output : {"sigmoid", "softmax"}
        ``sigmoid``: the per-model success probabilities; ``softmax``: those renormalised to
        sum to one over the models (what a softmax router head outputs).

    Attributes
    ----------
    estimators_ : list
        The fitted estimator(s).
    n_models_ : int
        K.

    References
    ----------
    Hao, Zeng, Wei & Jing, "RACER: Risk-Aware Calibrated Efficient Routing for Large Language
    Models", arXiv:2603.06616, 2026. Its score-based routers.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> rng = np.random.default_rng(0); X = rng.normal(size=(200, 3))
    >>> Y = np.column_stack([X[:, 0] > 0, X[:, 1] > 0]).astype(int)
    >>> router = ScoreRouter(LogisticRegression(), per_model=True).fit(X, Y)
    >>> router.predict_scores(X).shape
    (200, 2)
    """

    def __init__(self, estimator=None, per_model: bool = False, output: str = "sigmoid"):
        self.estimator = estimator
        self.per_model = per_model
        self.output = output

    def _base(self):
        if self.estimator is None:
            return MLPClassifier((64,), max_iter=300, random_state=0)
        return clone(self.estimator)

    def fit(self, X, Y):
        """Fit on features X (array or sparse matrix) and (n, K) 0/1 correctness Y."""
        check_choice(self.output, "output", OUTPUTS)
        Y = check_matrix(Y, "Y")
        check_same_length(X=np.empty(X.shape[0]) if hasattr(X, "shape") else X, Y=Y)
        if not np.isin(Y, (0.0, 1.0)).all():
            raise ValueError("Y must be binary (0/1): Y[i, k] = 1 iff model k answers query i")
        Y = Y.astype(int)
        self.n_models_ = Y.shape[1]
        self.constant_ = {}
        if self.per_model:
            self.estimators_ = []
            for k in range(self.n_models_):
                if np.unique(Y[:, k]).size < 2:  # a model always (never) right: constant score
                    self.constant_[k] = float(Y[0, k])
                    self.estimators_.append(None)
                else:
                    self.estimators_.append(self._base().fit(X, Y[:, k]))
        else:
            self.estimators_ = [self._base().fit(X, Y)]
        return self

    def predict_scores(self, X) -> np.ndarray:
        """(n, K) router scores in [0, 1]."""
        check_is_fitted(self, "estimators_")
        if self.per_model:
            columns = []
            for k, est in enumerate(self.estimators_):
                if est is None:
                    columns.append(np.full(X.shape[0], self.constant_[k]))
                else:
                    columns.append(est.predict_proba(X)[:, list(est.classes_).index(1)])
            probs = np.column_stack(columns)
        else:
            probs = np.asarray(self.estimators_[0].predict_proba(X), dtype=float)
            if probs.ndim != 2 or probs.shape[1] != self.n_models_:
                raise ValueError(f"estimator returned probabilities of shape {probs.shape}; "
                                 f"expected (n, {self.n_models_}): use per_model=True for "
                                 f"single-output classifiers")
        probs = np.clip(probs, 0.0, 1.0)
        if self.output == "softmax":
            probs = probs / np.maximum(probs.sum(axis=1, keepdims=True), np.finfo(float).tiny)
        return probs


class TextScoreRouter(BaseEstimator):
    """TF-IDF + one logistic regression per model, on prompt text (spec §6, Exp B).

    Parameters
    ----------
    ngram_range : tuple
        Word n-grams of the TF-IDF features.
    min_df : int
        Minimum document frequency.
    max_features : int
        Vocabulary cap.
    C : float
        Inverse regularisation of each logistic regression.
    output : {"sigmoid", "softmax"}
        See :class:`ScoreRouter`.

    References
    ----------
    Hao, Zeng, Wei & Jing, "RACER: Risk-Aware Calibrated Efficient Routing for Large Language
    Models", arXiv:2603.06616, 2026. A text router of our own for its score model (TF-IDF and
    logistic regression), not from the paper.

    Examples
    --------
    >>> import numpy as np
    >>> texts = ["add two numbers", "sum of numbers", "write a poem", "a short poem"] * 5
    >>> Y = np.array([[1, 0], [1, 0], [0, 1], [0, 1]] * 5)
    >>> router = TextScoreRouter(min_df=1).fit(texts, Y)
    >>> router.predict_scores(["a poem about numbers"]).shape
    (1, 2)
    """

    def __init__(self, ngram_range=(1, 2), min_df: int = 3, max_features: int = 50_000,
                 C: float = 2.0, output: str = "sigmoid"):
        self.ngram_range = ngram_range
        self.min_df = min_df
        self.max_features = max_features
        self.C = C
        self.output = output

    def fit(self, texts, Y):
        """Fit the vectoriser and the per-model classifiers on a list of prompts."""
        self.vectorizer_ = TfidfVectorizer(ngram_range=tuple(self.ngram_range),
                                           min_df=self.min_df, max_features=self.max_features,
                                           sublinear_tf=True)
        features = self.vectorizer_.fit_transform(list(texts))
        self.router_ = ScoreRouter(LogisticRegression(C=self.C, max_iter=1000), per_model=True,
                                   output=self.output).fit(features, Y)
        return self

    def predict_scores(self, texts) -> np.ndarray:
        """(n, K) router scores for a list of prompts."""
        check_is_fitted(self, "router_")
        return self.router_.predict_scores(self.vectorizer_.transform(list(texts)))


def mlp_router(output: str = "sigmoid", random_state: int = 0) -> ScoreRouter:
    """The synthetic benchmark's router: ``MLPClassifier((64,), max_iter=300)`` multi-label."""
    return ScoreRouter(MLPClassifier((64,), max_iter=300, random_state=random_state),
                       output=output)
