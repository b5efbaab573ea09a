"""The LCL estimator: input types, determinism, training signal, and bad input."""

import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.utils.estimator_checks import check_estimator

from icml26.lcl import LCL, simulate_lineage_tracing

TINY = dict(hidden_dims=(16, 8), embedding_dim=4, batch_size=6, max_epochs=2, warmup_epochs=0,
            grad_accum_steps=1, val_fraction=0.0, n_unlabeled_per_batch=2)


@pytest.fixture(scope="module")
def data():
    return simulate_lineage_tracing(n_clones=12, n_genes=300, seed=3)


def test_fit_transform_shapes_and_history(data):
    model = LCL(**TINY).fit(data.X, data.clone)
    assert model.transform(data.X).shape == (data.n_cells, 8)
    assert model.transform(data.X, space="projection").shape == (data.n_cells, 4)
    assert model.n_epochs_ == 2 and len(model.history_["train_loss"]) == 2
    assert model.n_batches_per_epoch_ == model.sampler_.n_batches


def test_same_seed_same_embedding_and_sparse_input_agrees(data):
    dense = LCL(**TINY, random_state=1).fit(data.X, data.clone).transform(data.X)
    again = LCL(**TINY, random_state=1).fit(data.X, data.clone).transform(data.X)
    sparse = LCL(**TINY, random_state=1).fit(sp.csr_matrix(data.X), data.clone).transform(sp.csr_matrix(data.X))
    other = LCL(**TINY, random_state=2).fit(data.X, data.clone).transform(data.X)
    assert np.array_equal(dense, again)
    np.testing.assert_allclose(sparse, dense, atol=1e-5)
    assert not np.allclose(other, dense)


def test_training_lowers_the_contrastive_loss(data):
    model = LCL(**dict(TINY, max_epochs=8, hidden_dims=(32, 16)), lr=3e-3).fit(data.X, data.clone)
    losses = model.history_["train_nt_xent"]
    assert losses[-1] < losses[0] - 0.1


def test_anndata_and_h5ad_input(data, tmp_path):
    anndata = pytest.importorskip("anndata")
    with pd.option_context("future.infer_string", False):  # anndata 0.12.6 cannot write arrow strings
        obs = pd.DataFrame({"clone_id": np.array([f"c{c}" for c in data.clone], dtype=object)},
                           index=np.array([str(i) for i in range(data.n_cells)], dtype=object))
        adata = anndata.AnnData(X=sp.csr_matrix(data.X), obs=obs)
        path = tmp_path / "lineage.h5ad"
        adata.write_h5ad(path)
    from_adata = LCL(**TINY).fit(adata).transform(adata)
    from_file = LCL(**TINY).fit(str(path)).transform(adata)
    from_numpy = LCL(**TINY).fit(data.X, np.array([f"c{c}" for c in data.clone])).transform(data.X)
    np.testing.assert_allclose(from_adata, from_numpy, atol=1e-5)
    np.testing.assert_allclose(from_file, from_numpy, atol=1e-5)


def test_anndata_without_clone_id_is_refused(data):
    anndata = pytest.importorskip("anndata")
    adata = anndata.AnnData(X=data.X)
    with pytest.raises(ValueError, match="without obs\\['clone_id'\\]"):
        LCL(**TINY).fit(adata)


def test_missing_labels_join_the_unlabelled_pool(data):
    labels = data.clone.astype(object)
    labels[:5] = None
    model = LCL(**TINY).fit(data.X, labels)
    assert model.sampler_.unlabeled_pool_.size == 5
    with pytest.raises(ValueError, match="missing labels while X_unlabeled is given"):
        LCL(**TINY).fit(data.X, labels, X_unlabeled=data.X[:3])


def test_sklearn_estimator_checks():
    est = LCL(hidden_dims=(8, 4), embedding_dim=4, batch_size=4, max_epochs=1, warmup_epochs=0,
              val_fraction=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_estimator(est, expected_failed_checks={
            "check_fit_score_takes_y": "the paper's API names the labels clone_ids, not y"})


def test_sklearn_clone_keeps_params_only():
    model = LCL(**TINY, temperature=0.2)
    assert clone(model).get_params() == model.get_params()


def test_clone_ids_length_mismatch(data):
    with pytest.raises(ValueError, match=f"X has {data.n_cells} rows, clone_ids has shape"):
        LCL(**TINY).fit(data.X, data.clone[:-1])


def test_no_clone_with_two_cells(data):
    with pytest.raises(ValueError, match="at least 2 clones with >= 2 cells"):
        with pytest.warns(UserWarning, match="fewer than 2 cells"):
            LCL(**TINY).fit(data.X, np.arange(data.n_cells))


def test_nan_and_infinite_expression_are_counted(data):
    X = data.X.copy()
    X[0, 0], X[1, 1] = np.nan, np.inf
    with pytest.raises(ValueError, match="X contains 2 NaN or infinite values"):
        LCL(**TINY).fit(X, data.clone)


def test_wrong_shapes(data):
    with pytest.raises(ValueError, match="2-dimensional"):
        LCL(**TINY).fit(data.X[0], data.clone[:1])
    with pytest.raises(ValueError, match="X_unlabeled must have the same number of genes"):
        LCL(**TINY).fit(data.X, data.clone, X_unlabeled=data.X[:4, :10])
    model = LCL(**TINY).fit(data.X, data.clone)
    with pytest.raises(ValueError, match="features, but LCL is expecting"):
        model.transform(data.X[:, :10])


@pytest.mark.parametrize("param, value", [("size_factor", 0.0), ("temperature", -1.0),
                                          ("lambda_penalty", -0.1), ("bn_mode", "both"),
                                          ("n_unlabeled_per_batch", -1), ("val_fraction", 1.0)])
def test_bad_parameters_are_named(data, param, value):
    with pytest.raises(ValueError, match=param):
        LCL(**{**TINY, param: value}).fit(data.X, data.clone)


def test_unlabelled_cells_per_batch_are_clamped_to_the_pool(data):
    with pytest.warns(UserWarning, match="clamped to 3"):
        model = LCL(**{**TINY, "n_unlabeled_per_batch": 10}).fit(data.X, data.clone, X_unlabeled=data.X[:3])
    assert model.sampler_.n_unlabeled_ == 3


def test_separate_batchnorm_with_one_unlabelled_cell_is_refused(data):
    with pytest.raises(ValueError, match="bn_mode='separate'"):
        LCL(**{**TINY, "n_unlabeled_per_batch": 1, "bn_mode": "separate"}).fit(
            data.X, data.clone, X_unlabeled=data.X[:4])


def test_separate_batchnorm_runs(data):
    model = LCL(**{**TINY, "bn_mode": "separate"}).fit(data.X, data.clone, X_unlabeled=data.X[:6])
    assert np.isfinite(model.history_["train_loss"]).all()
