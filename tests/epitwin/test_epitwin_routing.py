"""The 'routing' world (state switches which source drives each shaft's local field), its
positive control (ridge per true state) and the inferred-state ridge."""

import numpy as np
import pytest

from icml26.epitwin.baselines import InferredStateRidge, StateRidgeReconstructor
from icml26.epitwin.data import (ROUTE_LAGS, ROUTE_LOW_GAIN, _shift, make_synthetic_seeg,
                                 windows)


@pytest.fixture(scope="module")
def world():
    X, m, info = make_synthetic_seeg(0, 1, 60.0, n_shafts=4, world="routing")
    return X, m, info


def _corr(a, b, sel):
    return abs(np.corrcoef(a[sel], b[sel])[0, 1])


def test_routing_is_deterministic_and_keeps_the_spec_draws(world):
    X, m, info = world
    X2, m2, info2 = make_synthetic_seeg(0, 1, 60.0, n_shafts=4, world="routing")
    np.testing.assert_array_equal(X, X2)
    assert info["routing"]["route"] == info2["routing"]["route"]
    Xs, ms, infos = make_synthetic_seeg(0, 1, 60.0, n_shafts=4)
    np.testing.assert_array_equal(m.pos, ms.pos)          # same montage
    np.testing.assert_array_equal(info["state"], infos["state"])  # same state sequence
    np.testing.assert_array_equal(info["sources"], infos["sources"])
    assert not np.allclose(X, Xs)
    X3, _, _ = make_synthetic_seeg(0, 2, 60.0, n_shafts=4, world="routing")
    assert X3.shape != X.shape or not np.allclose(X3, X)


def test_routing_draws(world):
    X, m, info = world
    r = info["routing"]
    assert sorted(r["route"]) == m.shafts.tolist()
    pairs = [tuple(sorted(p)) for p in r["route"].values()]
    assert all(a != b for a, b in pairs) and len(set(pairs)) == len(pairs)  # no shared pair
    assert all(set(lag) <= set(ROUTE_LAGS) for lag in r["lags"].values())
    for c, cand in r["candidates"].items():
        assert set(r["route"][c]) <= set(cand)


def test_state_switches_which_source_drives_each_shaft(world):
    """The centre contact of every shaft follows d_0 in state 0 and d_1 in state 1."""
    X, m, info = world
    r, st, S = info["routing"], info["state"], info["sources"].astype(float)
    assert (st == 0).sum() > 2000 and (st == 1).sum() > 2000
    for c, (d0, d1) in r["route"].items():
        i = np.flatnonzero(m.shaft == c)[r["centre"][c]]
        a0, a1 = _shift(S[d0], r["lags"][c][0]), _shift(S[d1], r["lags"][c][1])
        assert _corr(X[i], a0, st == 0) > _corr(X[i], a0, st == 1) + 0.3, c
        assert _corr(X[i], a1, st == 1) > _corr(X[i], a1, st == 0) + 0.3, c
    assert ROUTE_LOW_GAIN <= 0.2  # large gain contrast


def test_marker_band_power_reveals_the_state(world):
    X, m, info = world
    f = np.fft.rfftfreq(512, 1 / 256.0)
    Z = windows(X, 512, 512)
    lab = windows(info["state"][None].astype(float), 512, 512)[:, 0].mean(1)
    pure = (lab == 0) | (lab == 1)
    P = (np.abs(np.fft.rfft(Z, axis=-1)) ** 2)[..., (f >= 8) & (f < 12)].mean(-1)  # (W, N)
    on = np.isin(m.shaft, info["routing"]["markers"])
    alpha = np.log(P[:, on]).mean(1)
    assert alpha[pure & (lab == 1)].min() > alpha[pure & (lab == 0)].max()


def _split(world):
    X, m, info = world
    Z = windows(X, 512, 256)
    L = windows(info["state"][None].astype(float), 512, 256)[:, 0].astype(int)
    return Z[:40], L[:40], Z[42::2], L[42::2], m  # 59 windows: train 0-21 s, test 21-60 s


def test_state_ridge_with_one_state_equals_two_states_with_one_label(world):
    Ztr, Ltr, Zte, _, m = _split(world)
    one = StateRidgeReconstructor(n_states=1).fit(Ztr, m)
    two = StateRidgeReconstructor(n_states=2).fit(Ztr, m, np.zeros_like(Ltr))
    a = one.predict(Zte, m, [1])
    b = two.predict(Zte, m, [1], np.zeros((len(Zte), Zte.shape[2]), int))
    np.testing.assert_allclose(a, b, atol=1e-5)
    np.testing.assert_array_equal(a[:, m.shaft != 1], Zte[:, m.shaft != 1])
    with pytest.raises(ValueError, match="labels"):
        two.predict(Zte, m, [1], np.zeros((3, 4), int))
    with pytest.raises(ValueError, match="labels"):
        StateRidgeReconstructor(n_states=2).fit(Ztr, m)


def test_oracle_beats_global_ridge_on_the_routing_world(world):
    Ztr, Ltr, Zte, Lte, m = _split(world)
    glob = StateRidgeReconstructor(n_states=1).fit(Ztr, m)
    oracle = StateRidgeReconstructor().fit(Ztr, m, Ltr)
    inferred = InferredStateRidge().fit(Ztr, m)
    err = {"ridge": 0.0, "oracle": 0.0, "inferred": 0.0}
    for s in m.shafts:
        on = m.shaft == s
        err["ridge"] += ((glob.predict(Zte, m, [s]) - Zte)[:, on] ** 2).sum()
        err["oracle"] += ((oracle.predict(Zte, m, [s], Lte) - Zte)[:, on] ** 2).sum()
        err["inferred"] += ((inferred.predict(Zte, m, [s]) - Zte)[:, on] ** 2).sum()
    assert np.sqrt(err["oracle"] / err["ridge"]) < 0.9
    assert np.sqrt(err["inferred"] / err["ridge"]) < 0.95
    # the inferred state matches the true one on the training windows (up to the label swap)
    maj = (Ltr.mean(1) > 0.5).astype(int)
    agree = (inferred.train_clusters_ == maj).mean()
    assert max(agree, 1 - agree) > 0.9


def test_pooled_class_equals_the_oracle_on_single_shaft_masks_and_is_worse_on_1_2(world):
    """StateRidgeReconstructor(mask_shafts=...) is the signed read-out's class given the state:
    fitted on the test's own single-shaft masks it is the per-mask oracle; pooled over 1-2-shaft
    masks it holds one map for several masks, so its training-window error can only be higher."""
    Ztr, Ltr, Zte, Lte, m = _split(world)
    oracle = StateRidgeReconstructor().fit(Ztr, m, Ltr)
    single = StateRidgeReconstructor(mask_shafts=(1, 1)).fit(Ztr, m, Ltr)
    pooled = StateRidgeReconstructor(mask_shafts=(1, 2)).fit(Ztr, m, Ltr)
    err = {"oracle": 0.0, "pooled": 0.0}
    for s in m.shafts:
        on = m.shaft == s
        a = oracle.predict(Zte, m, [s], Lte)
        np.testing.assert_allclose(single.predict(Zte, m, [s], Lte), a, atol=1e-5)
        np.testing.assert_array_equal(pooled.predict(Zte, m, [s], Lte)[:, ~on], Zte[:, ~on])
        err["oracle"] += ((oracle.predict(Ztr, m, [s], Ltr) - Ztr)[:, on] ** 2).sum()
        err["pooled"] += ((pooled.predict(Ztr, m, [s], Ltr) - Ztr)[:, on] ** 2).sum()
    assert err["pooled"] > err["oracle"] * 1.001
    with pytest.raises(ValueError, match="mask_shafts"):
        StateRidgeReconstructor(mask_shafts=(2, 1)).fit(Ztr, m, Ltr)
    other = make_synthetic_seeg(1, 1, 10.0, n_shafts=4, world="routing")[1]
    with pytest.raises(ValueError, match="montage"):
        pooled.predict(Zte, other, [0], Lte)
