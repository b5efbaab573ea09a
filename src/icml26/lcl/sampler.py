"""The clone-mate positive-pair sampler of LCL (faithful to the official code's batch builder)."""

from __future__ import annotations

import math
import warnings

import numpy as np

from icml26.core.validation import check_int, check_scalar_in

__all__ = ["LineagePairSampler", "labelled_mask", "unrank_pairs"]


def labelled_mask(clone_ids) -> np.ndarray:
    """True where a clone label is present (not None / NaN / empty string)."""
    values = np.asarray(clone_ids, dtype=object).ravel()
    out = np.ones(values.size, dtype=bool)
    for i, v in enumerate(values):
        if v is None or (isinstance(v, float) and math.isnan(v)) or (isinstance(v, str) and v == ""):
            out[i] = False
        elif isinstance(v, np.floating) and np.isnan(v):
            out[i] = False
    return out


def unrank_pairs(ranks: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Pairs ``(i, j)``, ``0 <= i < j < m``, at the given ranks of the lexicographic order.

    Lets the sampler draw random pairs of a giant clone without listing its C(m, 2) pairs.
    """
    r = np.asarray(ranks, dtype=np.int64)
    total = m * (m - 1) // 2
    # row i holds ranks [start(i), start(i) + m - 1 - i) with start(i) = i m - i (i + 1) / 2
    i = (m - 2 - np.floor(np.sqrt(-8.0 * r + 4.0 * m * (m - 1) - 7) / 2.0 - 0.5)).astype(np.int64)
    start = i * m - i * (i + 1) // 2
    # guard the float sqrt at huge m: move i by one where the rank falls outside its row
    low = r < start
    i[low] -= 1
    start = i * m - i * (i + 1) // 2
    high = r >= start + (m - 1 - i)
    i[high] += 1
    start = i * m - i * (i + 1) // 2
    j = r - start + i + 1
    if np.any(r < 0) or np.any(r >= total):
        raise ValueError(f"ranks must be in [0, {total}) for m={m}")
    return i, j


class LineagePairSampler:
    """Batches of clone-mate positive pairs (and unlabelled cells) for the NT-Xent loss of LCL.

    For each clone c with |S_c| >= 2 cells it keeps ``max(coverage, floor(s |P_c|))`` of its
    |P_c| = C(|S_c|, 2) pairs: first the *coverage* pairs (walking the pairs in index order
    and keeping those that cover a new cell, so every cell is in a pair), then uniformly random
    other pairs. Batches are built once: while at least ``batch_size`` clones have unused
    pairs, draw that many distinct clones and pop one random unused pair from each (so the
    in-batch negatives come from other clones); once fewer remain, the batch takes one pair
    from each remaining clone and is filled with random pairs (with replacement) of random
    clones. Each batch also gets ``n_unlabeled`` cells drawn without replacement from the
    unlabelled pool.

    Parameters
    ----------
    clone_ids : array-like (n_cells,)
        Clone label of every labelled cell; None / NaN mark cells without a barcode, which
        are never paired.
    batch_size : int
        B, positive pairs per batch. Clamped (with a warning) to the number of eligible clones.
    size_factor : float in (0, 1]
        s, the share of each clone's pairs that is used.
    n_unlabeled : int
        n_u, unlabelled cells per batch (clamped with a warning to the pool size).
    unlabeled_pool : array-like of int, optional
        Indices of the unlabelled cells (returned as drawn). None or empty: no unlabelled cells.
    max_pairs_per_clone : int
        Cap on the pairs kept per clone beyond the coverage pairs (guards giant clones; pairs
        are drawn by rank, so C(n_c, 2) pairs are never listed).
    resample_each_epoch : bool
        False (the official code): one batch list for all epochs. True: a new list per epoch.
    seed : int
        Seed of the pair and batch draws (the official code uses 17).

    Attributes
    ----------
    pairs_per_clone_ : ndarray
        Number of pairs kept for each eligible clone (k_c, at least the coverage count).
    eligible_clones_ : ndarray
        The labels of the clones with at least two cells.
    n_batches : int
        Batches in one epoch.
    batch_size_ : int
        B after clamping.

    Examples
    --------
    >>> sampler = LineagePairSampler([0, 0, 0, 1, 1, 1, 2, 2], batch_size=2, size_factor=1.0,
    ...                              n_unlabeled=0, seed=0)
    >>> a, b, u = next(iter(sampler))
    >>> a.shape, b.shape, u.shape
    ((2,), (2,), (0,))

    References
    ----------
    Yang, Wang, Lin. "Leveraging Lineage Barcodes as Natural Augmentations for Contrastive
    Learning of Cell Fate in scRNA-seq Data", ICML 2026 (preprint: bioRxiv 2024.10.28.620670).
    """

    def __init__(self, clone_ids, batch_size: int = 50, size_factor: float = 0.3, n_unlabeled: int = 5,
                 unlabeled_pool=None, max_pairs_per_clone: int = 10_000,
                 resample_each_epoch: bool = False, seed: int = 17):
        self.batch_size = check_int(batch_size, "batch_size", min_value=1)
        self.size_factor = check_scalar_in(size_factor, "size_factor", low=0.0, high=1.0, low_inclusive=False)
        self.n_unlabeled = check_int(n_unlabeled, "n_unlabeled", min_value=0)
        self.max_pairs_per_clone = check_int(max_pairs_per_clone, "max_pairs_per_clone", min_value=1)
        self.resample_each_epoch = bool(resample_each_epoch)
        self.seed = seed
        labels = np.asarray(clone_ids, dtype=object).ravel()
        if labels.size == 0:
            raise ValueError("clone_ids is empty; expected one clone label per cell")
        has_label = labelled_mask(labels)
        codes = np.full(labels.size, -1, dtype=np.int64)
        uniques, inverse = np.unique(labels[has_label].astype(str), return_inverse=True)
        codes[has_label] = inverse
        sizes = np.bincount(codes[has_label], minlength=uniques.size)
        small = int(np.count_nonzero(sizes < 2))
        if small:
            warnings.warn(f"{small} clones have fewer than 2 cells and give no positive pairs; "
                          f"they are excluded from pairing", UserWarning, stacklevel=2)
        eligible = np.flatnonzero(sizes >= 2)
        if eligible.size < 2:
            raise ValueError(f"need at least 2 clones with >= 2 cells for contrastive negatives, "
                             f"got {eligible.size} (of {uniques.size} clones, {int(has_label.sum())} "
                             f"labelled cells)")
        self.batch_size_ = self.batch_size
        if self.batch_size > eligible.size:
            warnings.warn(f"batch_size={self.batch_size} exceeds the {eligible.size} clones with >= 2 "
                          f"cells; clamped to {eligible.size}", UserWarning, stacklevel=2)
            self.batch_size_ = int(eligible.size)
        order = np.argsort(codes, kind="stable")
        bounds = np.searchsorted(codes[order], eligible)
        self._members = [order[s:s + sizes[c]] for s, c in zip(bounds, eligible)]  # index order
        self.eligible_clones_ = uniques[eligible]
        pool = np.asarray([] if unlabeled_pool is None else unlabeled_pool, dtype=np.int64).ravel()
        self.unlabeled_pool_ = pool
        self.n_unlabeled_ = self.n_unlabeled
        if self.n_unlabeled > pool.size:
            if pool.size:
                warnings.warn(f"n_unlabeled={self.n_unlabeled} exceeds the unlabelled pool of "
                              f"{pool.size} cells; clamped to {pool.size}", UserWarning, stacklevel=2)
            self.n_unlabeled_ = int(pool.size)
        counts = np.array([m.size for m in self._members])
        n_pairs = counts * (counts - 1) // 2
        k = np.floor(self.size_factor * n_pairs).astype(np.int64)
        coverage = counts - 1
        self.pairs_per_clone_ = np.maximum(coverage, np.minimum(k, coverage + self.max_pairs_per_clone))
        self._epoch = 0
        self._cache = None

    # -- pairs ----------------------------------------------------------------------------
    def _clone_pairs(self, rng, members: np.ndarray, n_keep: int) -> np.ndarray:
        """(n_keep, 2) global cell indices: coverage pairs then random extra pairs."""
        m = members.size
        # walking (0,1), (0,2), ... in index order, exactly the pairs (0, j) cover a new cell
        coverage = np.column_stack([np.zeros(m - 1, np.int64), np.arange(1, m)])
        n_extra = n_keep - (m - 1)
        if n_extra > 0:  # uniform over the other pairs, i.e. pairs among cells 1 .. m-1
            ranks = rng.choice((m - 1) * (m - 2) // 2, size=n_extra, replace=False)
            i, j = unrank_pairs(ranks, m - 1)
            coverage = np.vstack([coverage, np.column_stack([i + 1, j + 1])])
        return members[coverage]

    def _build(self, epoch: int) -> list:
        rng = np.random.default_rng([int(self.seed), int(epoch)])
        pools = [rng.permutation(self._clone_pairs(rng, mem, int(k)))
                 for mem, k in zip(self._members, self.pairs_per_clone_)]
        remaining = np.array([p.shape[0] for p in pools])
        B = self.batch_size_
        batches = []
        active = np.flatnonzero(remaining > 0)
        while active.size:
            if active.size >= B:
                chosen = rng.choice(active, size=B, replace=False)
                fill = np.empty((0, 2), np.int64)
            else:
                chosen = active
                extra = rng.integers(0, len(pools), size=B - active.size)
                fill = np.array([pools[c][rng.integers(pools[c].shape[0])] for c in extra],
                                dtype=np.int64).reshape(-1, 2)
            remaining[chosen] -= 1
            pairs = np.array([pools[c][remaining[c]] for c in chosen], dtype=np.int64).reshape(-1, 2)
            pairs = np.vstack([pairs, fill])
            if self.n_unlabeled_:
                unl = self.unlabeled_pool_[rng.choice(self.unlabeled_pool_.size, self.n_unlabeled_,
                                                      replace=False)]
            else:
                unl = np.empty(0, np.int64)
            batches.append((pairs[:, 0], pairs[:, 1], unl))
            active = active[remaining[active] > 0]
        return batches

    def epoch_batches(self, epoch: int = 0) -> list:
        """The list of ``(idx_a, idx_b, idx_u)`` batches of an epoch."""
        key = epoch if self.resample_each_epoch else 0
        if self._cache is None or self._cache[0] != key:
            self._cache = (key, self._build(key))
        return self._cache[1]

    @property
    def n_batches(self) -> int:
        return len(self.epoch_batches(self._epoch))

    def batch_count_bounds(self) -> tuple[int, int]:
        """``(max(ceil(sum_c k_c / B), max_c k_c), ceil(sum_c k_c / B) + max_c k_c)``.

        Every batch but the tail ones uses B pairs, and each tail batch uses one pair of every
        clone still holding pairs, so the batch count lies in this range.
        """
        total, top = int(self.pairs_per_clone_.sum()), int(self.pairs_per_clone_.max())
        full = math.ceil(total / self.batch_size_)
        return max(full, top), full + top

    def __len__(self) -> int:
        return self.n_batches

    def __iter__(self):
        batches = self.epoch_batches(self._epoch)
        self._epoch += 1
        return iter(batches)
