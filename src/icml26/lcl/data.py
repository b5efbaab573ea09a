"""Data for LCL: input coercion (numpy / scipy.sparse / AnnData / ``.h5ad``), log-normalisation,
and the branching-fate lineage-tracing simulator with ground truth.

No real lineage-tracing dataset can be had offline (LARRY and CellTagging are downloads), so
every experiment runs on :func:`simulate_lineage_tracing`. Its generative process is our
reconstruction (the paper's own "pseudo-real" generator is not public); its priming knob
``priming`` plays the role of the paper's mixing parameter beta.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from icml26.core.validation import check_int, check_scalar_in

__all__ = ["LineageData", "simulate_lineage_tracing", "log_normalize", "read_lineage_h5ad",
           "as_expression_matrix", "unpack_anndata", "CLONE_KEY"]

CLONE_KEY = "clone_id"


@dataclass
class LineageData:
    """A simulated lineage-tracing experiment with its ground truth.

    Attributes
    ----------
    X : ndarray (n_cells, n_genes)
        ``log1p(1e4 * counts / library)``.
    counts : ndarray (n_cells, n_genes)
        Raw counts (integers stored as float32).
    clone : ndarray (n_cells,)
        Clone (barcode) index of every cell, ``0 .. n_clones - 1``.
    time : ndarray (n_cells,)
        0 for early cells, 1 for late cells.
    cell_type : ndarray of str (n_cells,)
        ``"progenitor"`` for early cells, ``"fate_f"`` for late cells.
    fate_bias : ndarray (n_clones, n_fates)
        The true fate bias pi_c of every clone.
    fate : ndarray (n_cells,)
        The late fate f_i (``-1`` for early cells).
    cc_phase : ndarray (n_cells,)
        Cell-cycle phase phi_i in [0, 2 pi), independent of clone.
    nuisance : ndarray (n_cells, n_nuisance)
        Activities of the nuisance programs, independent of clone.
    classes : tuple of str
        The terminal classes ``("fate_0", ...)``.
    gene_roles : dict of str to ndarray
        Gene indices of each program (``terminal``, ``priming``: lists per fate; ``progenitor``,
        ``s_phase``, ``g2m``, ``memory``; ``nuisance``: list per program).

    References
    ----------
    "Leveraging Lineage Barcodes as Natural Augmentations for Contrastive Learning of Cell Fate in
    scRNA-seq Data", ICML 2026 (ICML author list not retrieved); preprint: Yang, Wang & Lin, "LCL:
    Contrastive Learning for Lineage Barcoded scRNA-seq Data", bioRxiv 2024
    (doi:10.1101/2024.10.28.620670). A simulator of our own with ground truth (not from the paper);
    the setting is clonal barcoding as in Weinreb, Rodriguez-Fraticelli, Camargo & Klein, "Lineage
    tracing on transcriptional landscapes links state to fate during differentiation", Science 2020
    (LARRY).

    Examples
    --------
    >>> data = simulate_lineage_tracing(n_clones=20, seed=0)
    >>> isinstance(data, LineageData), data.X.shape[0] == data.clone.shape[0]
    (True, True)
    >>> sorted(set(data.time.tolist()))
    [0, 1]
    """

    X: np.ndarray
    counts: np.ndarray
    clone: np.ndarray
    time: np.ndarray
    cell_type: np.ndarray
    fate_bias: np.ndarray
    fate: np.ndarray
    cc_phase: np.ndarray
    nuisance: np.ndarray
    classes: tuple
    gene_roles: dict

    @property
    def n_cells(self) -> int:
        return int(self.X.shape[0])


def _check_matrix(X, name: str, dtype, what: str, nonnegative: bool):
    """A dense array or CSR matrix of ``dtype``: 2-D, non-empty, finite (and >= 0 if asked).

    The error names the offending shape or the number of bad values.
    """
    if sp.issparse(X):
        X = sp.csr_matrix(X)
    if np.iscomplexobj(X.data if sp.issparse(X) else np.asarray(X)):
        raise ValueError(f"{name}: Complex data not supported; expected real values")
    if sp.issparse(X):
        mat = sp.csr_matrix(X, dtype=dtype)
        values = mat.data
    else:
        try:
            mat = np.asarray(X, dtype=dtype)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{name} must be a numeric matrix, got {type(X).__name__} ({exc})") from exc
        values = mat
    if mat.ndim != 2:
        raise ValueError(f"{name} must be 2-dimensional (cells x genes), got shape {mat.shape}; "
                         f"Reshape your data (one row per cell)")
    if mat.shape[0] == 0 or mat.shape[1] == 0:
        what = "sample" if mat.shape[0] == 0 else "feature"
        raise ValueError(f"{name} is empty: found array with 0 {what}(s) (shape={mat.shape}) while a "
                         f"minimum of 1 is required.")
    bad = int(np.count_nonzero(~np.isfinite(values)))
    if bad:
        raise ValueError(f"{name} contains {bad} NaN or infinite values; expected finite {what}")
    if nonnegative:
        negative = int(np.count_nonzero(values < 0))
        if negative:
            raise ValueError(f"{name} contains {negative} negative values; counts must be >= 0")
    return mat


def _check_counts(counts, name: str = "counts"):
    """Counts as float64 (dense) or CSR, finite and non-negative."""
    return _check_matrix(counts, name, np.float64, "counts", nonnegative=True)


def log_normalize(counts, target_sum: float = 1e4) -> np.ndarray:
    """Scanpy-style ``normalize_total(target_sum)`` then ``log1p``.

    Parameters
    ----------
    counts : array-like or sparse (n_cells, n_genes)
        Non-negative raw counts.
    target_sum : float
        Library size every cell is scaled to before the log.

    Returns
    -------
    ndarray (n_cells, n_genes), float32 (CSR in, CSR out)

    Examples
    --------
    >>> import numpy as np
    >>> log_normalize(np.array([[1.0, 3.0]]), target_sum=4.0).astype(float).round(3).tolist()
    [[0.693, 1.386]]
    """
    check_scalar_in(target_sum, "target_sum", low=0.0, low_inclusive=False)
    mat = _check_counts(counts)
    totals = np.asarray(mat.sum(axis=1)).ravel()
    empty = int(np.count_nonzero(totals == 0))
    if empty:
        raise ValueError(f"counts has {empty} cells with zero total counts; remove them before normalising")
    scale = target_sum / totals
    if sp.issparse(mat):
        out = sp.diags(scale) @ mat
        out.data = np.log1p(out.data)
        return out.astype(np.float32).tocsr()
    return np.log1p(mat * scale[:, None]).astype(np.float32)


def unpack_anndata(adata, clone_ids=None, name: str = "X"):
    """``(adata.X, clone_ids or adata.obs['clone_id'])`` for an AnnData; anything else unchanged."""
    if not _is_anndata(adata):
        return adata, clone_ids
    if clone_ids is None:
        if CLONE_KEY not in adata.obs.columns:
            raise ValueError(f"{name} is an AnnData without obs['{CLONE_KEY}']; add the clone "
                             f"labels there or pass clone_ids explicitly "
                             f"(obs columns: {list(adata.obs.columns)})")
        clone_ids = adata.obs[CLONE_KEY].to_numpy(dtype=object)
    return adata.X, clone_ids


def _is_anndata(obj) -> bool:
    return type(obj).__name__ == "AnnData" and hasattr(obj, "obs") and hasattr(obj, "X")


def read_lineage_h5ad(path):
    """Read an ``.h5ad`` file with :mod:`anndata` (the ``lcl`` extra).

    The result can be passed to :meth:`icml26.lcl.LCL.fit` as is: its ``.X`` is the
    expression matrix and ``obs['clone_id']`` the barcode labels (missing = unlabelled).
    """
    try:
        import anndata
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("reading .h5ad needs anndata: pip install 'icml26[lcl]'") from exc
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no .h5ad file at {path!r}")
    return anndata.read_h5ad(path)


def as_expression_matrix(X, name: str = "X"):
    """A float32 dense array or CSR matrix, 2-D, non-empty and finite.

    Sparse input stays sparse (rows are densified per batch by the caller). The error
    names the offending shape or the number of NaN / infinite values.
    """
    if isinstance(X, (str, os.PathLike)):
        X = read_lineage_h5ad(X).X
    if _is_anndata(X):
        X = X.X
    return _check_matrix(X, name, np.float32, "expression", nonnegative=False)


def _disjoint_blocks(rng, n_genes: int, sizes: list[int]) -> list[np.ndarray]:
    need = sum(sizes)
    if need > n_genes:
        raise ValueError(f"n_genes must be >= {need} to hold the disjoint gene programs, got {n_genes}")
    order = rng.permutation(n_genes)
    return np.split(order[:need], np.cumsum(sizes)[:-1])


def simulate_lineage_tracing(n_clones: int = 200, n_fates: int = 3, n_genes: int = 600,
                             priming: float = 1.0, cycle_amplitude: float = 1.5,
                             n_nuisance: int = 10, nuisance_amplitude: float = 1.0,
                             memory: float = 0.0, early_mean: float = 4, late_mean: float = 10,
                             library_mean: float = 3000, nb_theta: float = 5.0,
                             program_size: int = 30, nuisance_size: int = 40,
                             seed: int = 0) -> LineageData:
    """Simulate a two-time-point clonal barcoding experiment with branching fates.

    Resolution (not from the paper): the paper's "pseudo-real" generator is not public; this
    one plants a weak, clone-shared *priming* signal of each clone's future fate in the early
    cells, beside strong clone-independent cell-cycle and nuisance programs, so that fate
    prediction from early cells is possible but not from the dominant variance directions.

    Parameters
    ----------
    n_clones, n_fates, n_genes : int
        Clones C, terminal fates F, genes G.
    priming : float
        beta: early cells of clone c get ``beta * (pi_c[f] - 1/F)`` on the priming genes of fate f.
    cycle_amplitude : float
        A_cc of early cells (late cells get half of it) on the S / G2M genes.
    n_nuisance, nuisance_amplitude : int, float
        Nuisance programs of ``nuisance_size`` random genes (may overlap anything) with
        per-cell activity ``N(0, 1)`` times the amplitude.
    memory : float
        rho: clone-memory genes get ``rho * m_c`` with ``m_c ~ N(0, I)`` (clone identity signal).
    early_mean, late_mean : float
        Mean cells per clone at each time: early ``1 + Poisson(early_mean - 1)``, late
        ``2 + Poisson(late_mean - 2)``.
    library_mean : float
        Median library size (LogNormal(log library_mean, 0.3)).
    nb_theta : float
        Negative-binomial inverse dispersion (Gamma-Poisson).
    program_size, nuisance_size : int
        Genes per fate/priming/progenitor/cycle/memory program, and per nuisance program.
    seed : int
        Seed of every random draw.

    Returns
    -------
    LineageData

    Notes
    -----
    Per cell i of clone c: time t_i, progress d_i = 0 (early) or U(0.6, 1) (late), late fate
    f_i ~ Cat(pi_c) with pi_c ~ Dir(0.5), cycle phase phi_i ~ U(0, 2 pi), nuisance a_ik ~ N(0, 1).
    The log-rate is b_g + 1.5 (1 - d_i) [progenitor] + 2 d_i [terminal genes of f_i]
    + beta (pi_c[f] - 1/F) [priming genes of f, early only] + A max(0, cos phi_i) [S]
    + A max(0, sin phi_i) [G2M] + amp a_ik [nuisance k] + rho m_c [memory] + N(0, 0.2^2),
    with b_g ~ N(0, 0.5^2). Counts are NB(mean l_i softmax(eta_i), theta).

    Examples
    --------
    >>> data = simulate_lineage_tracing(n_clones=20, seed=0)
    >>> data.X.shape[1], data.fate_bias.shape
    (600, (20, 3))
    """
    for name, value in (("n_clones", n_clones), ("n_fates", n_fates), ("n_genes", n_genes),
                        ("program_size", program_size)):
        check_int(value, name, min_value=2 if name in ("n_clones", "n_fates") else 1)
    check_int(n_nuisance, "n_nuisance", min_value=0)
    check_int(nuisance_size, "nuisance_size", min_value=1, max_value=n_genes)
    for name, value in (("priming", priming), ("cycle_amplitude", cycle_amplitude),
                        ("nuisance_amplitude", nuisance_amplitude), ("memory", memory)):
        check_scalar_in(value, name)
    check_scalar_in(early_mean, "early_mean", low=1.0)
    check_scalar_in(late_mean, "late_mean", low=2.0)
    check_scalar_in(library_mean, "library_mean", low=0.0, low_inclusive=False)
    check_scalar_in(nb_theta, "nb_theta", low=0.0, low_inclusive=False)
    rng = np.random.default_rng(seed)
    F, G, P = n_fates, n_genes, program_size
    blocks = _disjoint_blocks(rng, G, [P] * (2 * F + 4))
    terminal, priming_genes = blocks[:F], blocks[F:2 * F]
    progenitor, s_genes, g2m_genes, memory_genes = blocks[2 * F:]
    nuisance_genes = [rng.choice(G, size=nuisance_size, replace=False) for _ in range(n_nuisance)]
    baseline = rng.normal(0.0, 0.5, size=G)

    fate_bias = rng.dirichlet(np.full(F, 0.5), size=n_clones)
    memory_vec = rng.normal(size=(n_clones, P))
    n_early = 1 + rng.poisson(early_mean - 1, size=n_clones)
    n_late = 2 + rng.poisson(late_mean - 2, size=n_clones)
    clone = np.concatenate([np.repeat(np.arange(n_clones), n_early), np.repeat(np.arange(n_clones), n_late)])
    time = np.concatenate([np.zeros(n_early.sum(), int), np.ones(n_late.sum(), int)])
    order = np.lexsort((time, clone))  # cells grouped by clone, early first
    clone, time = clone[order], time[order]
    n = clone.size
    late = time == 1
    progress = np.where(late, rng.uniform(0.6, 1.0, size=n), 0.0)
    cum = np.cumsum(fate_bias[clone], axis=1)
    fate = np.minimum((rng.random(n)[:, None] > cum).sum(axis=1), F - 1)
    fate = np.where(late, fate, -1)
    phase = rng.uniform(0.0, 2 * math.pi, size=n)
    activity = rng.normal(size=(n, n_nuisance))

    eta = np.broadcast_to(baseline, (n, G)).copy()
    eta[:, progenitor] += 1.5 * (1.0 - progress)[:, None]
    for f in range(F):
        eta[:, terminal[f]] += (2.0 * progress * (fate == f))[:, None]
        eta[:, priming_genes[f]] += (priming * (fate_bias[clone, f] - 1.0 / F) * ~late)[:, None]
    amplitude = np.where(late, 0.5 * cycle_amplitude, cycle_amplitude)
    eta[:, s_genes] += (amplitude * np.maximum(0.0, np.cos(phase)))[:, None]
    eta[:, g2m_genes] += (amplitude * np.maximum(0.0, np.sin(phase)))[:, None]
    for k, genes in enumerate(nuisance_genes):
        eta[:, genes] += nuisance_amplitude * activity[:, k:k + 1]
    eta[:, memory_genes] += memory * memory_vec[clone]
    eta += rng.normal(0.0, 0.2, size=eta.shape)

    library = rng.lognormal(math.log(library_mean), 0.3, size=n)
    eta -= eta.max(axis=1, keepdims=True)
    rate = np.exp(eta)
    mean = library[:, None] * rate / rate.sum(axis=1, keepdims=True)
    counts = rng.poisson(rng.gamma(nb_theta, mean / nb_theta)).astype(np.float32)
    empty = counts.sum(axis=1) == 0
    counts[empty, int(np.argmax(baseline))] = 1.0  # a cell with no counts cannot be normalised
    classes = tuple(f"fate_{f}" for f in range(F))
    cell_type = np.where(late, np.array(classes, dtype=object)[np.maximum(fate, 0)], "progenitor")
    roles = {"terminal": terminal, "priming": priming_genes, "progenitor": progenitor,
             "s_phase": s_genes, "g2m": g2m_genes, "memory": memory_genes, "nuisance": nuisance_genes}
    return LineageData(X=log_normalize(counts), counts=counts, clone=clone, time=time,
                       cell_type=cell_type.astype(object), fate_bias=fate_bias, fate=fate,
                       cc_phase=phase, nuisance=activity, classes=classes, gene_roles=roles)
