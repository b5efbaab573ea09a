"""Probes: the math against direct computation, the pitfalls the spec lists, and bad input."""

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import Ridge, RidgeCV
from sklearn.model_selection import GroupKFold, KFold, train_test_split

from icml26.tcbench import (StructuralAlignmentProbe, SynthTC, TCFrames, q_con, q_dyn, q_stat,
                            regime_balance, regime_ratio, trajectory_split)
from icml26.tcbench.experiment import protocol_latents
from icml26.tcbench.probes import DEFAULT_ALPHAS, ridge_path_cv


@pytest.fixture(scope="module")
def frames():
    return SynthTC(n_trajectories=150, seed=3, render=False).generate()


@pytest.fixture(scope="module")
def shortcut(frames):
    Z = protocol_latents(frames, "shortcut", seed=3)
    return Z, StructuralAlignmentProbe(random_state=42).fit(Z, frames)


# -- sampling ---------------------------------------------------------------------------------
def test_regime_balance_equal_counts_without_replacement():
    p = np.r_[np.full(30, 950.0), np.full(100, 1000.0)]
    idx = regime_balance(p, seed=0)
    assert (p[idx] < 980).sum() == (p[idx] >= 980).sum() == 30
    assert np.unique(idx).size == idx.size


def test_regime_balance_is_deterministic_in_seed():
    p = np.r_[np.full(30, 950.0), np.full(100, 1000.0)]
    assert np.array_equal(regime_balance(p, seed=42), regime_balance(p, seed=42))
    assert not np.array_equal(regime_balance(p, seed=42), regime_balance(p, seed=1))


def test_trajectory_split_keeps_storms_whole():
    ids = np.repeat(np.arange(20), 5)
    train, test = trajectory_split(ids, 0.2, seed=0)
    assert set(ids[train]).isdisjoint(ids[test])
    assert np.unique(ids[test]).size == 4 and train.size + test.size == ids.size


# -- ridge path CV == sklearn RidgeCV -------------------------------------------------------------
def test_ridge_path_cv_matches_sklearn_ridgecv():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 12))
    y = X @ rng.standard_normal(12) + 3 * rng.standard_normal(300)
    splits = list(GroupKFold(5).split(X, y, np.repeat(np.arange(30), 10)))
    mse = ridge_path_cv(X, y, DEFAULT_ALPHAS, splits)
    ref = RidgeCV(alphas=DEFAULT_ALPHAS, cv=splits, scoring="neg_mean_squared_error").fit(X, y)
    assert DEFAULT_ALPHAS[np.argmin(mse)] == ref.alpha_
    assert mse.min() == pytest.approx(-ref.best_score_, rel=1e-8)


def test_probe_coef_is_the_refit_ridge_in_raw_space(frames):
    Z = protocol_latents(frames, "isomorphic", seed=1)
    probe = StructuralAlignmentProbe(random_state=42, standardize=True).fit(Z, frames)
    X, y = Z[probe.train_mask_], frames.pressure[probe.train_mask_]
    mu, sd = X.mean(0), X.std(0)
    ref = Ridge(alpha=probe.alpha_).fit((X - mu) / sd, y)
    np.testing.assert_allclose(probe.coef_, ref.coef_ / sd, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(probe.predict(Z[:5]), ref.predict((Z[:5] - mu) / sd), rtol=1e-9)


def test_isomorphic_latent_is_recovered(frames):
    Z = protocol_latents(frames, "isomorphic", seed=1)
    report = StructuralAlignmentProbe(random_state=42).fit(Z, frames).evaluate(Z, frames)
    assert report["overall"]["r2"] > 0.99
    assert report["intense"]["n"] == pytest.approx(report["moderate"]["n"], rel=0.5)


# -- Q_stat: one global σ (pitfall: per-regime σ hides the collapse) ----------------------------
def test_q_stat_uses_global_sigma_of_test_frames(frames, shortcut):
    Z, probe = shortcut
    df = q_stat(probe, Z, frames)
    y = frames.pressure[probe.test_mask_]
    expected = np.abs(probe.predict(Z[probe.test_mask_]) - y) / y.std()
    np.testing.assert_allclose(df.xi_stat.to_numpy(), expected)
    assert probe.sigma_ == pytest.approx(y.std())


def test_per_regime_sigma_would_hide_the_collapse(frames, shortcut):
    Z, probe = shortcut
    df = q_stat(probe, Z, frames)
    global_ratio = regime_ratio(df, "xi_stat")
    err = (df.y_pred - df.y_true).abs()
    per_regime = err / df.groupby("regime").y_true.transform("std")
    local_ratio = per_regime[df.regime == "intense"].median() / per_regime[df.regime == "moderate"].median()
    assert global_ratio >= 2.0
    assert local_ratio < 0.75 * global_ratio


# -- Q_dyn: reuse the static map (pitfall: refitting L on differences) ---------------------------
def test_q_dyn_reuses_static_map_on_consecutive_test_frames(frames, shortcut):
    Z, probe = shortcut
    df = q_dyn(probe, Z, frames)
    assert set(df.trajectory_id) <= set(probe.test_trajectories_)
    first = df.iloc[0]
    i = np.flatnonzero((frames.trajectory_id == first.trajectory_id) & (frames.t == first.t))[0]
    j = np.flatnonzero((frames.trajectory_id == first.trajectory_id) & (frames.t == first.t + 1))[0]
    assert first.dy_pred == pytest.approx((Z[j] - Z[i]) @ probe.coef_)
    assert first.xi_dyn == pytest.approx(abs((Z[j] - Z[i]) @ probe.coef_ - (frames.pressure[j] - frames.pressure[i])))
    assert first.bin == np.floor(frames.pressure[i] / 5) * 5 + 2.5


def test_refitting_the_map_for_q_dyn_changes_the_result(frames, shortcut):
    Z, probe = shortcut
    df = q_dyn(probe, Z, frames)
    order = np.lexsort((frames.t, frames.trajectory_id))
    same = frames.trajectory_id[order][1:] == frames.trajectory_id[order][:-1]
    i, j = order[:-1][same], order[1:][same]
    refit = Ridge(alpha=1.0).fit(Z[j] - Z[i], frames.pressure[j] - frames.pressure[i])
    test = np.isin(frames.trajectory_id[i], probe.test_trajectories_)
    refit_err = np.abs(refit.predict(Z[j][test] - Z[i][test])
                       - (frames.pressure[j] - frames.pressure[i])[test]).mean()
    assert abs(refit_err - df.xi_dyn.mean()) > 0.1 * df.xi_dyn.mean()


def test_q_dyn_refuses_nonlinear_probe(frames):
    small = frames.subset(np.flatnonzero(frames.trajectory_id < 10))
    Z = protocol_latents(small, "isomorphic", dim=4, seed=0)
    probe = StructuralAlignmentProbe(head="mlp", cv=2, random_state=42).fit(Z, small)
    with pytest.raises(ValueError, match="linear probe"):
        q_dyn(probe, Z, small)


def test_q_dyn_without_transitions_raises():
    f = TCFrames(pressure=np.r_[np.full(10, 1000.0), np.full(10, 950.0)],
                 trajectory_id=np.arange(20), t=np.zeros(20, int))
    Z = np.c_[f.pressure, np.random.default_rng(0).standard_normal(20)]
    probe = StructuralAlignmentProbe(cv=2, random_state=0).fit(Z, f)
    with pytest.raises(ValueError, match="no transitions"):
        q_dyn(probe, Z, f, subset="all")


# -- pitfall: frame-level split leaks storm identity -------------------------------------------
def test_frame_level_split_leaks_and_probe_splits_by_trajectory(frames):
    rng = np.random.default_rng(0)
    frames = frames.subset(frames.trajectory_id < 60)
    ids = frames.trajectory_id
    codes = rng.standard_normal((ids.max() + 1, 120))[ids]        # storm identity only
    Z = codes + 0.05 * rng.standard_normal(codes.shape)
    probe = StructuralAlignmentProbe(random_state=42, balance=False).fit(Z, frames)
    assert set(ids[probe.train_mask_]).isdisjoint(ids[probe.test_mask_])
    honest = probe.evaluate(Z, frames)["overall"]["mae"]
    tr, te = train_test_split(np.arange(len(frames)), test_size=0.2, random_state=42)
    folds = list(KFold(5).split(tr))                      # the repo's frame-level CV
    alpha = DEFAULT_ALPHAS[np.argmin(ridge_path_cv(Z[tr], frames.pressure[tr], DEFAULT_ALPHAS, folds))]
    leaky = Ridge(alpha=alpha).fit(Z[tr], frames.pressure[tr])
    leaky_mae = np.abs(leaky.predict(Z[te]) - frames.pressure[te]).mean()
    assert leaky_mae < 0.7 * honest


def test_group_cv_false_reproduces_repo_frame_level_folds(frames):
    Z = protocol_latents(frames, "nonlinear", seed=2)
    grouped = StructuralAlignmentProbe(random_state=42).fit(Z, frames)
    repo = StructuralAlignmentProbe(random_state=42, group_cv=False).fit(Z, frames)
    assert np.array_equal(grouped.test_mask_, repo.test_mask_)
    assert not np.allclose(grouped.cv_mse_, repo.cv_mse_)


# -- pitfall: unbalanced training underfits the intense regime ---------------------------------
def test_unbalanced_training_raises_intense_error(frames):
    other = SynthTC(n_trajectories=150, seed=4, render=False).generate()
    Z, Z_other = (protocol_latents(f, "nonlinear", seed=5) for f in (frames, other))
    intense = other.pressure < 980
    maes = {}
    for balance in (True, False):
        probe = StructuralAlignmentProbe(random_state=42, balance=balance).fit(Z, frames)
        maes[balance] = np.abs(probe.predict(Z_other[intense]) - other.pressure[intense]).mean()
    assert maes[True] < 0.9 * maes[False]


# -- Q_con -------------------------------------------------------------------------------------
def test_q_con_gap_matches_direct_computation(frames):
    Z = protocol_latents(frames, "isomorphic", seed=1)
    p = StructuralAlignmentProbe(random_state=42).fit(Z, frames)
    w = StructuralAlignmentProbe(target="wind", random_state=42).fit(Z, frames)
    df = q_con(p, w, Z, frames)
    row = df.dropna(subset=["gap_true"]).iloc[0]
    sel = p.test_mask_ & (frames.pressure >= row.lo) & (frames.pressure < row.hi)
    low, high = sel & (frames.lat < 15), sel & (frames.lat > 25)
    assert row.gap_true == pytest.approx(frames.wind[low].mean() - frames.wind[high].mean())
    assert row.gap_pred == pytest.approx(w.predict(Z[low]).mean() - w.predict(Z[high]).mean())
    # exact latents keep the latitude ordering of wind (gradient-wind balance)
    assert df.attrs["psi_con"]["moderate"]["pairwise_rate"] < 0.2


def test_q_con_rejects_swapped_probes(frames, shortcut):
    Z, probe = shortcut
    with pytest.raises(ValueError, match="wind_probe"):
        q_con(probe, probe, Z, frames)


# -- bad input -------------------------------------------------------------------------------------
def test_nan_features_raise_with_count(frames):
    Z = protocol_latents(frames, "isomorphic", seed=0)
    Z[[3, 7]] = np.nan
    with pytest.raises(ValueError, match="2 rows with NaN"):
        StructuralAlignmentProbe().fit(Z, frames)


def test_length_mismatch_raises(frames):
    Z = protocol_latents(frames, "isomorphic", seed=0)[:-1]
    with pytest.raises(ValueError, match=f"{len(frames) - 1} rows but frames has {len(frames)}"):
        StructuralAlignmentProbe().fit(Z, frames)


def test_regime_without_frames_cannot_be_balanced(frames):
    keep = frames.pressure >= 980
    f = frames.subset(keep)
    with pytest.raises(ValueError, match="intense regime .* has 0 frames"):
        StructuralAlignmentProbe().fit(np.c_[f.pressure, f.lat], f)


def test_single_trajectory_raises():
    f = TCFrames(pressure=[1000.0, 950.0, 990.0, 960.0], trajectory_id=[1, 1, 1, 1], t=[0, 1, 2, 3])
    with pytest.raises(ValueError, match="at least 2 trajectories"):
        StructuralAlignmentProbe(cv=2).fit(np.eye(4), f)


def test_unknown_target_and_fully_nan_target_raise(frames):
    Z = np.c_[frames.pressure, frames.lat]
    with pytest.raises(ValueError, match="target must be one of"):
        StructuralAlignmentProbe(target="rain").fit(Z, frames)
    f = frames.subset(np.arange(len(frames)))
    f.wind = np.full(len(f), np.nan)
    with pytest.raises(ValueError, match="fully NaN"):
        StructuralAlignmentProbe(target="wind").fit(Z, f)


def test_nan_targets_are_masked(frames):
    f = frames.subset(np.arange(len(frames)))
    f.pressure = f.pressure.copy()
    f.pressure[::7] = np.nan
    Z = np.c_[np.nan_to_num(f.pressure, nan=1000.0), f.lat]
    probe = StructuralAlignmentProbe(random_state=42).fit(Z, f)
    assert not (probe.test_mask_ & np.isnan(f.pressure)).any()


def test_constant_test_target_warns():
    p = np.r_[np.full(20, 1000.0), np.full(20, 950.0)]
    f = TCFrames(pressure=p, trajectory_id=np.r_[np.arange(20) % 10, 10 + np.arange(20) % 10],
                 t=np.r_[np.arange(20) // 10, np.arange(20) // 10])
    Z = np.c_[p, np.random.default_rng(0).standard_normal(40)]
    with pytest.warns(RuntimeWarning, match="σ = 0"):
        StructuralAlignmentProbe(cv=2, random_state=0, test_size=0.05).fit(Z, f)


def test_ill_conditioned_ridge_does_not_crash(frames):
    Z = np.c_[frames.pressure, frames.pressure * (1 + 1e-15), frames.lat]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        probe = StructuralAlignmentProbe(alphas=[1e-3], random_state=42).fit(Z, frames)
    assert np.isfinite(probe.coef_).all()


def test_probe_follows_the_sklearn_parameter_contract():
    from sklearn.base import clone
    probe = StructuralAlignmentProbe(target="wind", alphas=[1.0, 10.0], random_state=7)
    twin = clone(probe)
    assert twin.get_params() == probe.get_params()
    assert twin.set_params(seed=8).seed == 8 and not hasattr(twin, "coef_")


def test_one_dimensional_features_and_empty_split_side_raise(frames):
    with pytest.raises(ValueError, match="2-dimensional"):
        StructuralAlignmentProbe().fit(frames.pressure, frames)
    with pytest.raises(ValueError, match="empty train or test side"):
        trajectory_split([0, 0, 1, 1], test_size=0.9)


def test_seed_is_a_deprecated_alias_of_random_state():
    from icml26.tcbench.encoders import PixelPCA

    f = SynthTC(n_trajectories=40, render=False, seed=1).generate()
    Z = np.c_[f.pressure, f.lat, np.random.default_rng(0).normal(size=len(f))]
    new = StructuralAlignmentProbe(random_state=43).fit(Z, f)
    with pytest.warns(FutureWarning, match="random_state"):
        old = StructuralAlignmentProbe(seed=43).fit(Z, f)
    np.testing.assert_array_equal(new.test_trajectories_, old.test_trajectories_)
    other = StructuralAlignmentProbe(random_state=44).fit(Z, f)
    assert not np.array_equal(new.test_trajectories_, other.test_trajectories_)
    with warnings.catch_warnings():
        warnings.simplefilter("error")        # the new spelling warns about nothing
        StructuralAlignmentProbe(random_state=43).fit(Z, f)
    assert StructuralAlignmentProbe().get_params()["random_state"] == 42
    x = np.random.default_rng(0).uniform(200, 300, (30, 8, 8))
    with pytest.warns(FutureWarning):
        np.testing.assert_allclose(PixelPCA(4, seed=1).fit_transform(x),
                                   PixelPCA(4, random_state=1).fit_transform(x))
