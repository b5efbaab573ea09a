"""Bad input gets a clear error that names the argument."""

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from icml26.sgshift import SGShift, SGShiftA, SGShiftK, make_concept_shift
from icml26.sgshift.baselines import DiffLasso


@pytest.fixture(scope="module")
def data():
    d = make_concept_shift(n_source=600, n_target=120, p=5, n_informative=2, n_shifted=1, seed=0)
    return d, LogisticRegression().fit(d.X_source, d.y_source)


def test_source_model_feature_mismatch(data):
    d, model = data
    with pytest.raises(ValueError, match="source_model was fitted on 5 features but X_target has 4"):
        SGShift().fit(d.X_target[:, :4], d.y_target, source_model=model)


def test_x_source_feature_mismatch(data):
    d, model = data
    with pytest.raises(ValueError, match="X_source has 4 features but X_target has 5"):
        SGShiftA().fit(d.X_target, d.y_target, source_model=model, X_source=d.X_source[:, :4],
                       y_source=d.y_source)


def test_non_binary_y_for_logistic_outcome(data):
    d, model = data
    y = np.arange(len(d.y_target)) % 3
    with pytest.raises(ValueError, match="y_target has 3 distinct values.*multiclass"):
        SGShift(task="classification").fit(d.X_target, y, source_model=model)


def test_single_class_target(data):
    d, model = data
    with pytest.raises(ValueError, match="y_target has a single class"):
        SGShift(task="classification").fit(d.X_target, np.zeros(len(d.y_target)),
                                           source_model=model)


def test_nan_in_x_target(data):
    d, model = data
    X = d.X_target.copy()
    X[3, 2] = np.nan
    with pytest.raises(ValueError, match="X_target contains NaN"):
        SGShift().fit(X, d.y_target, source_model=model)


def test_nan_in_y_target(data):
    d, model = data
    y = d.y_target.astype(float)
    y[0] = np.nan
    with pytest.raises(ValueError, match="y_target contains NaN"):
        SGShift().fit(d.X_target, y, source_model=model)


def test_nan_in_offset(data):
    d, _ = data
    offset = np.zeros(len(d.y_target))
    offset[1] = np.inf
    with pytest.raises(ValueError, match="offset contains NaN"):
        SGShift().fit(d.X_target, d.y_target, offset=offset)


def test_all_constant_columns(data):
    d, _ = data
    with pytest.raises(ValueError, match="every column of X_target is constant"):
        SGShift().fit(np.ones_like(d.X_target), d.y_target, offset=np.zeros(len(d.y_target)))


def test_length_mismatch(data):
    d, model = data
    with pytest.raises(ValueError, match="X_target has 120, y_target has 119"):
        SGShift().fit(d.X_target, d.y_target[:-1], source_model=model)


def test_too_few_target_samples(data):
    d, model = data
    with pytest.raises(ValueError, match="X_target"):
        SGShift().fit(d.X_target[:5], d.y_target[:5], source_model=model)


def test_unfitted_source_model(data):
    d, _ = data
    from sklearn.exceptions import NotFittedError
    with pytest.raises(NotFittedError):
        SGShift().fit(d.X_target, d.y_target, source_model=LogisticRegression())


def test_missing_source_model_and_offset(data):
    d, _ = data
    with pytest.raises(ValueError, match="pass source_model"):
        SGShift().fit(d.X_target, d.y_target)


def test_absorption_without_source_data(data):
    d, model = data
    with pytest.raises(ValueError, match="need source_model, X_source and y_source"):
        SGShiftA().fit(d.X_target, d.y_target, source_model=model)


def test_knockoffs_refuse_small_target_without_force():
    d = make_concept_shift(n_source=300, n_target=15, p=8, n_informative=2, n_shifted=1, seed=0)
    model = LogisticRegression().fit(d.X_source, d.y_source)
    with pytest.raises(ValueError, match="n_target >= 2 \\* p.*force=True"):
        SGShiftK(lam=0.05).fit(d.X_target, d.y_target, source_model=model,
                               X_source=d.X_source, y_source=d.y_source)


@pytest.mark.parametrize("params, message", [
    ({"threshold": 0.0}, "threshold must be in"),
    ({"threshold": 1.5}, "threshold must be in"),
    ({"v": 0}, "v must be >= 1"),
    ({"absorption_ratio": 0.0}, "absorption_ratio must be in"),
    ({"lam": -1.0}, "lam must be in"),
    ({"lam": "bic"}, "lam must be one of"),
    ({"lam": [0.1, -0.2]}, "lam must be 'cv', a positive float"),
    ({"task": "ranking"}, "task must be one of"),
    ({"basis": "poly"}, "basis must be one of"),
    ({"n_lambdas": 1}, "n_lambdas must be >= 2"),
    ({"knockoff_method": "magic"}, "knockoff_method must be one of"),
])
def test_bad_parameters_name_the_parameter(data, params, message):
    d, model = data
    with pytest.raises(ValueError, match=message):
        SGShift(**params).fit(d.X_target, d.y_target, source_model=model)


def test_baseline_requires_a_model(data):
    d, _ = data
    with pytest.raises(ValueError, match="model must be"):
        DiffLasso().fit(d.X_source, d.y_source, d.X_target, d.y_target)


def test_predict_checks_feature_count(data):
    d, model = data
    est = SGShift(lam=0.05).fit(d.X_target, d.y_target, source_model=model)
    with pytest.raises(ValueError, match="X has 4 features, expected 5"):
        est.predict(d.X_val[:, :4])


def test_multiclass_y_with_a_classifier_and_auto_task_is_refused(data):
    # task="auto" used to read a 3-class y as a regression target next to a logistic offset
    d, model = data
    y = np.arange(len(d.y_target)) % 3
    with pytest.raises(ValueError, match="y_target has 3 distinct values.*classifier.*multiclass"):
        SGShift().fit(d.X_target, y, source_model=model)


def test_bad_collinear_option(data):
    d, model = data
    with pytest.raises(ValueError, match="collinear"):
        SGShift(collinear="merge").fit(d.X_target, d.y_target, source_model=model)
