"""LineagePairSampler: coverage, pair counts, batch structure, batch-count bounds, bad input."""

import warnings
from math import comb

import numpy as np
import pytest

from icml26.lcl import LineagePairSampler
from icml26.lcl.sampler import unrank_pairs


def _clones(sizes):
    return np.repeat(np.arange(len(sizes)), sizes)


def _all_pairs(sampler):
    a = np.concatenate([b[0] for b in sampler.epoch_batches(0)])
    b = np.concatenate([b[1] for b in sampler.epoch_batches(0)])
    return a, b


def test_unrank_pairs_matches_lexicographic_enumeration():
    for m in (2, 3, 7, 40):
        i, j = np.triu_indices(m, 1)
        ui, uj = unrank_pairs(np.arange(comb(m, 2)), m)
        assert np.array_equal(ui, i) and np.array_equal(uj, j)


def test_pairs_per_clone_follow_coverage_and_size_factor():
    sizes = [2, 5, 14, 30]
    sampler = LineagePairSampler(_clones(sizes), batch_size=2, size_factor=0.3, n_unlabeled=0)
    expected = [max(n - 1, int(np.floor(0.3 * comb(n, 2)))) for n in sizes]
    assert sampler.pairs_per_clone_.tolist() == expected


def test_every_cell_is_paired_and_pairs_are_clone_mates():
    clones = _clones([3, 6, 9, 12, 4])
    sampler = LineagePairSampler(clones, batch_size=3, size_factor=0.5, n_unlabeled=0, seed=3)
    a, b = _all_pairs(sampler)
    assert np.all(clones[a] == clones[b]) and np.all(a != b)
    assert set(np.concatenate([a, b])) == set(range(clones.size))


def test_full_batches_draw_distinct_clones_and_every_kept_pair_is_used():
    clones = _clones([8] * 12)
    sampler = LineagePairSampler(clones, batch_size=5, size_factor=0.4, n_unlabeled=0, seed=1)
    batches = sampler.epoch_batches(0)
    assert all(a.size == 5 for a, _, _ in batches)
    assert len(set(clones[batches[0][0]])) == 5  # in-batch negatives come from other clones
    # tail batches refill with repeats of kept pairs, so the distinct pairs are exactly the kept ones
    pairs = {tuple(sorted(p)) for a, b, _ in batches for p in zip(a.tolist(), b.tolist())}
    assert len(pairs) == sampler.pairs_per_clone_.sum()


def test_batch_count_lies_within_its_bounds():
    clones = _clones(np.random.default_rng(0).integers(2, 25, size=60))
    sampler = LineagePairSampler(clones, batch_size=10, size_factor=0.3, n_unlabeled=0)
    low, high = sampler.batch_count_bounds()
    assert low <= sampler.n_batches <= high


def test_unlabelled_cells_are_drawn_without_replacement_from_the_pool():
    pool = np.arange(100, 130)
    sampler = LineagePairSampler(_clones([4] * 6), batch_size=3, n_unlabeled=7, unlabeled_pool=pool)
    for _, _, u in sampler.epoch_batches(0):
        assert u.size == 7 and np.unique(u).size == 7 and set(u) <= set(pool)


def test_batches_are_fixed_across_epochs_unless_resampled():
    clones = _clones([5] * 10)
    fixed = LineagePairSampler(clones, batch_size=4, seed=5)
    first, second = list(fixed), list(fixed)
    assert all(np.array_equal(x[0], y[0]) for x, y in zip(first, second))
    moving = LineagePairSampler(clones, batch_size=4, seed=5, resample_each_epoch=True)
    first, second = list(moving), list(moving)
    assert not all(np.array_equal(x[0], y[0]) for x, y in zip(first, second))


def test_same_seed_same_batches():
    clones = _clones([6] * 8)
    a = LineagePairSampler(clones, batch_size=3, seed=9).epoch_batches(0)
    b = LineagePairSampler(clones, batch_size=3, seed=9).epoch_batches(0)
    assert all(np.array_equal(x[0], y[0]) and np.array_equal(x[1], y[1]) for x, y in zip(a, b))


def test_max_pairs_per_clone_caps_a_giant_clone():
    sampler = LineagePairSampler(_clones([3000, 3]), batch_size=2, size_factor=1.0, max_pairs_per_clone=50,
                                 n_unlabeled=0)
    assert sampler.pairs_per_clone_.tolist() == [2999 + 50, 3]


def test_small_clones_are_excluded_with_a_warning():
    with pytest.warns(UserWarning, match="2 clones have fewer than 2 cells"):
        sampler = LineagePairSampler([0, 0, 1, 1, 2, 3], batch_size=2)
    assert sorted(sampler.eligible_clones_.tolist()) == ["0", "1"]


def test_fewer_than_two_eligible_clones_raise():
    with pytest.raises(ValueError, match="at least 2 clones with >= 2 cells"):
        LineagePairSampler([0, 1, 2, 3], batch_size=2)
    with pytest.raises(ValueError, match="at least 2 clones"):
        LineagePairSampler([0, 0, 0], batch_size=2)


def test_batch_size_larger_than_the_clone_count_is_clamped():
    with pytest.warns(UserWarning, match="clamped to 3"):
        sampler = LineagePairSampler(_clones([4, 4, 4]), batch_size=10, n_unlabeled=0)
    assert sampler.batch_size_ == 3


def test_missing_labels_are_never_paired():
    clones = np.array([0, 0, None, 1, 1, np.nan, 1], dtype=object)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sampler = LineagePairSampler(clones, batch_size=2, size_factor=1.0, n_unlabeled=0)
    a, b = _all_pairs(sampler)
    assert not {2, 5} & set(np.concatenate([a, b]))


@pytest.mark.parametrize("kwargs, message", [
    ({"size_factor": 0.0}, "size_factor"), ({"size_factor": 1.5}, "size_factor"),
    ({"batch_size": 0}, "batch_size"), ({"n_unlabeled": -1}, "n_unlabeled"),
])
def test_bad_parameters_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        LineagePairSampler(_clones([3, 3]), **kwargs)
