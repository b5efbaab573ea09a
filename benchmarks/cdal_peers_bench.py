"""CDAL against the clustering a user has: scikit-learn ``KMeans(n_init=10)`` on the concatenated
standardised views, and CDAL with the old, direct per-view residual (``‖X − LWᵀ‖²`` formed in
full; the reuse of X_v W_v across the iteration is in both).

CDAL does more than k-means (projections, anchors, the fairness graph step, then its own k-means
on the anchor embedding): the ratio CDAL / KMeans is the cost of the method's own work, reported
as measured, not a target it can meet by construction. The old/new ratio is the fast-path saving.
Preset "rotated" (3 views, 4 clusters, 2 groups), CDAL(4) defaults (λ = 100), one thread, CPU
time, interleaved repeats (``benchmarks/peers.py``). Run ``python benchmarks/cdal_peers_bench.py``
or ``pytest benchmarks/cdal_peers_bench.py``.
"""

from __future__ import annotations

import contextlib

import numpy as np

from peers import interleaved, print_rows, ratio_row

SIZES = (8_000, 32_000)


def _old_residuals(Xs, sq_norms, XW, W, latent):
    import icml26.cdal.cdal as cdal_module

    return np.array([max(float(np.sum((X - latent @ Wv.T) ** 2)), cdal_module.RESIDUAL_FLOOR)
                     for X, Wv in zip(Xs, W)])


@contextlib.contextmanager
def _old_residual_path():
    import icml26.cdal.cdal as cdal_module

    fast = cdal_module._view_residuals
    cdal_module._view_residuals = _old_residuals
    try:
        yield
    finally:
        cdal_module._view_residuals = fast


def measure(sizes=SIZES, repeats: int = 5) -> list:
    from sklearn.cluster import KMeans

    from icml26.cdal import CDAL, make_preset
    from icml26.cdal.cdal import prepare_views

    rows = []
    for n in sizes:
        data = make_preset("rotated", seed=0, n=n)
        X = np.hstack(prepare_views(data.views).data)

        def ours():
            return CDAL(4, random_state=0).fit(data.views, sensitive=data.groups)

        def old():
            with _old_residual_path():
                return ours()

        med = interleaved({"CDAL": ours, "CDAL (direct residual)": old,
                           "KMeans(n_init=10)": lambda: KMeans(4, n_init=10, random_state=0).fit(X)},
                          repeats=repeats)
        label = f"rotated preset n={n}"
        rows += [ratio_row(label, "CDAL", "KMeans(n_init=10)", med),
                 ratio_row(label, "CDAL", "CDAL (direct residual)", med)]
    return rows


def test_cdal_vs_kmeans_and_direct_residual():
    rows = measure(sizes=(8_000,), repeats=3)
    fix = [r for r in rows if r["peer"] == "CDAL (direct residual)"]
    assert all(r["ratio"] <= 1.05 for r in fix), rows   # the fix is not slower


if __name__ == "__main__":
    print_rows(measure())
