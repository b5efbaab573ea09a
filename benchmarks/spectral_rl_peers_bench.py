"""spectral_rl against scipy, the library a user has: the bottom eigenpairs of the ρ-weighted
normalized Laplacian (``laplacian_eigenpairs`` / ``SpectralFeatures`` in auto mode) and of the
unweighted state-graph Laplacian (``proto_value_functions``) vs ``scipy.sparse.linalg.eigsh``
(shift-invert, the same k) on the same matrix.

Two peers: ``eigsh`` on the operator already built (a strict bound: our time also builds it
from P — stationary distribution, edge weights, normalisation), and the same pipeline written
with scipy defaults (ρ by ``spsolve`` of the reduced system, W, N, ``eigsh``). One thread, CPU time, interleaved repeats
(``benchmarks/peers.py``); ratio = icml26 / scipy, target ≤ 1.0, never above 1.2. Run
``python benchmarks/spectral_rl_peers_bench.py`` or ``pytest benchmarks/spectral_rl_peers_bench.py``.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import eigsh

from peers import interleaved, print_rows, ratio_row

ROOMS = ((30, 30), (60, 60))
K = 9  # SpectralFeatures(n_components=8) asks for k + 1


def _pvf_operator(P):
    A = ((P + P.T) > 0).astype(np.float64).tolil()
    A.setdiag(0)
    A = sp.csr_matrix(A)
    return (sp.diags(np.asarray(A.sum(axis=1)).ravel()) - A).tocsc()


def scipy_pipeline(P, k=K):
    """What a scipy user writes: ρ from (I − P)ᵀρ = 0 with ρ_0 = 1, W = ½(DP + PᵀD), N, eigsh."""
    from scipy.sparse.linalg import spsolve

    n = P.shape[0]
    A = (sp.identity(n, format="csr") - P).T.tocsc()
    rho = np.concatenate([[1.0], spsolve(A[1:, 1:], -A[1:, 0].toarray().ravel())])
    rho /= rho.sum()
    DP = sp.diags(rho) @ P
    W = (DP + DP.T) * 0.5
    s = sp.diags(1.0 / np.sqrt(rho))
    N = (sp.identity(n) - s @ W @ s).tocsc()
    return eigsh(N, k=k, sigma=-1e-3, which="LM")


def measure(rooms=ROOMS, repeats: int = 7) -> list:
    from icml26.spectral_rl import GridWorld, SpectralFeatures, proto_value_functions
    from icml26.spectral_rl.laplacian import (EIGSH_SIGMA, _weights_and_rho, laplacian_eigenpairs,
                                              normalized_laplacian)

    rows = []
    for h, w in rooms:
        P = GridWorld.open_room(h, w).transition("uniform")
        _, rho, W = _weights_and_rho(P)
        N = normalized_laplacian(W, rho).tocsc()
        L = _pvf_operator(P)
        fns = {
            "laplacian_eigenpairs": lambda: laplacian_eigenpairs(P, k=K),
            "SpectralFeatures": lambda: SpectralFeatures(n_components=K - 1).fit(P),
            "proto_value_functions": lambda: proto_value_functions(P, K),
            "eigsh(N)": lambda: eigsh(N, k=K, sigma=EIGSH_SIGMA, which="LM"),
            "eigsh(L)": lambda: eigsh(L, k=K, sigma=EIGSH_SIGMA, which="LM"),
            "scipy pipeline": lambda: scipy_pipeline(P),
        }
        med = interleaved(fns, repeats=repeats)
        room = f"{h}x{w} open room (n={P.shape[0]}, k={K})"
        rows += [ratio_row(room, "laplacian_eigenpairs", "eigsh(N)", med),
                 ratio_row(room, "laplacian_eigenpairs", "scipy pipeline", med),
                 ratio_row(room, "SpectralFeatures", "eigsh(N)", med),
                 ratio_row(room, "proto_value_functions", "eigsh(L)", med)]
    return rows


def test_spectral_rl_vs_scipy_eigsh():
    rows = measure(rooms=((30, 30),), repeats=5)
    # Against the scipy pipeline (the same work) and for PVFs (no ρ) the target holds; against
    # bare eigsh on a prebuilt operator, laplacian_eigenpairs also pays for ρ (reported).
    assert all(r["ratio"] <= 1.2 for r in rows if r["peer"] != "eigsh(N)"), rows


if __name__ == "__main__":
    print_rows(measure())
