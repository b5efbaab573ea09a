"""Data loaders and generators."""

import numpy as np
import pytest

from icml26.sgshift import (load_diabetes_readmission, load_support2, make_concept_shift,
                            make_semisynthetic)


def test_diabetes_loader_shapes_and_planted_features():
    data = load_diabetes_readmission()
    assert data.X_source.shape == (49213, 33) and data.X_target.shape == (24402, 33)
    assert set(data.y_source.unique()) == {0, 1}
    assert set(data.shifted_features) <= set(data.feature_names)


def test_support2_loader_uses_log_charges_and_hospital_death_domains():
    data = load_support2()
    assert data.X_source.shape == (5453, 64) and data.X_target.shape == (1817, 64)
    assert "hospdead" not in data.feature_names and "charges" not in data.feature_names
    assert 3 < data.y_source.mean() < 6  # log10 of dollars
    assert len(data.shifted_features) == 15


def test_loader_reads_a_user_folder(tmp_path):
    import pandas as pd
    frame = pd.DataFrame({"a": [1, 2], "readmitted": [0, 1]})
    frame.to_csv(tmp_path / "source_DiabetesReadmission.csv", index=False)
    frame.to_csv(tmp_path / "target_DiabetesReadmission.csv", index=False)
    data = load_diabetes_readmission(tmp_path)
    assert data.feature_names == ["a"]
    with pytest.raises(FileNotFoundError, match="support2_processed"):
        load_support2(tmp_path)


def test_make_concept_shift_plants_the_shift_it_reports():
    data = make_concept_shift(n_source=100, n_target=50, n_val=20, p=12, n_informative=4,
                              n_shifted=3, magnitude=2.0, omitted=(0,), seed=7)
    assert data.X_source.shape == (100, 12) and data.X_val.shape == (20, 12)
    assert len(data.truth) == 3
    np.testing.assert_array_equal(np.flatnonzero(data.shift_coef), data.truth)
    assert set(np.abs(data.shift_coef[data.truth])) == {2.0}
    assert 0 not in data.visible and len(data.visible) == 11
    again = make_concept_shift(n_source=100, n_target=50, n_val=20, p=12, n_informative=4,
                               n_shifted=3, magnitude=2.0, omitted=(0,), seed=7)
    np.testing.assert_array_equal(data.X_target, again.X_target)


def test_make_concept_shift_rejects_bad_arguments():
    with pytest.raises(ValueError, match="kind must be one of"):
        make_concept_shift(kind="quadratic")
    with pytest.raises(ValueError, match="shifted indices must lie"):
        make_concept_shift(p=5, n_informative=2, shifted=(7,))


def test_semisynthetic_hard_labels_are_the_generator_predictions():
    real = load_diabetes_readmission()
    kwargs = dict(n_source=500, n_target=100, n_val=100, seed=0)
    hard = make_semisynthetic(real.X_source, real.y_source, real.X_target,
                              real.shifted_features, source_labels="hard", **kwargs)
    sampled = make_semisynthetic(real.X_source, real.y_source, real.X_target,
                                 real.shifted_features, **kwargs)
    np.testing.assert_allclose(hard.X_source.mean(axis=0)[hard.X_source.std(axis=0) > 0], 0,
                               atol=1e-8)
    assert len(hard.truth) == 10
    assert not np.array_equal(hard.y_source, sampled.y_source)
