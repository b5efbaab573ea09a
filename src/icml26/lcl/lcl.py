"""LCL: lineage-aware contrastive learning (encoder, NT-Xent + entropy loss, estimator).

Yang, Wang, Lin. "Leveraging Lineage Barcodes as Natural Augmentations for Contrastive
Learning of Cell Fate in scRNA-seq Data", ICML 2026 (preprint: "LCL: Contrastive Learning for
Lineage Barcoded scRNA-seq Data", bioRxiv 10.1101/2024.10.28.620670). Architecture, loss,
sampler and optimisation follow the official code (GitHub ``SZ-yang/Lineage-aware_CL``).
"""

from __future__ import annotations

import math
import warnings
from contextlib import contextmanager

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted
from torch import nn

from icml26.core.device import resolve_device, seeded_rng, to_numpy
from icml26.core.validation import check_choice, check_int, check_scalar_in, check_tensor

from .data import as_expression_matrix, unpack_anndata
from .sampler import LineagePairSampler, labelled_mask

__all__ = ["LCLEncoder", "lcl_loss", "LCL"]

NORM_EPS = 1e-8     # added to the norms before the cosine step
ENTROPY_EPS = 1e-8  # inside the log of the entropy penalty (as in the official code)


def _block(n_in: int, n_out: int, relu: bool = True) -> list:
    layers = [nn.Linear(n_in, n_out), nn.BatchNorm1d(n_out)]
    return layers + [nn.ReLU()] if relu else layers


class LCLEncoder(nn.Module):
    """The LCL base encoder f and projection head g.

    f: G -> hidden_dims[0] -> ... -> hidden_dims[-1], each layer Linear -> BatchNorm1d -> ReLU;
    its output h is the embedding used downstream. g: h -> h (Linear, BN, ReLU) ->
    ``embedding_dim`` (Linear, BN); its output z only enters the contrastive loss.

    Parameters
    ----------
    n_genes : int
        Input dimension G.
    hidden_dims : tuple of int
        Widths of the base encoder (the paper: 1024, 256, 64).
    embedding_dim : int
        Width of the projection z (the paper: 32).

    References
    ----------
    "Leveraging Lineage Barcodes as Natural Augmentations for Contrastive Learning of Cell Fate in
    scRNA-seq Data", ICML 2026 (ICML author list not retrieved); preprint: Yang, Wang & Lin, "LCL:
    Contrastive Learning for Lineage Barcoded scRNA-seq Data", bioRxiv 2024
    (doi:10.1101/2024.10.28.620670). Its projection head follows Chen, Kornblith, Norouzi & Hinton,
    "A Simple Framework for Contrastive Learning of Visual Representations", ICML 2020 (SimCLR).

    Examples
    --------
    >>> import torch
    >>> enc = LCLEncoder(10, hidden_dims=(8, 4), embedding_dim=3).eval()
    >>> h, z = enc(torch.zeros(2, 10))
    >>> tuple(h.shape), tuple(z.shape)
    ((2, 4), (2, 3))
    """

    def __init__(self, n_genes: int, hidden_dims=(1024, 256, 64), embedding_dim: int = 32):
        super().__init__()
        check_int(n_genes, "n_genes", min_value=1)
        check_int(embedding_dim, "embedding_dim", min_value=1)
        dims = [int(n_genes), *[check_int(d, "hidden_dims entries", min_value=1) for d in hidden_dims]]
        if len(dims) < 2:
            raise ValueError("hidden_dims must hold at least one width")
        self.base = nn.Sequential(*[m for a, b in zip(dims[:-1], dims[1:]) for m in _block(a, b)])
        width = dims[-1]
        self.projection = nn.Sequential(*_block(width, width), *_block(width, embedding_dim, relu=False))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.base(x)          # (batch, hidden_dims[-1])
        return h, self.projection(h)  # (batch, embedding_dim)


def _normalize(z: torch.Tensor) -> torch.Tensor:
    return z / (z.norm(dim=1, keepdim=True) + NORM_EPS)


def lcl_loss(z_a: torch.Tensor, z_b: torch.Tensor, z_u: torch.Tensor | None = None,
             temperature: float = 0.5, lambda_penalty: float = 0.0):
    """NT-Xent over clone-mate pairs plus the entropy penalty on unlabelled cells.

    Parameters
    ----------
    z_a, z_b : Tensor (B, d)
        Projections of the two cells of each positive pair (row k of ``z_a`` and of ``z_b``
        share a clone); the other 2B - 2 rows of the batch are the negatives.
    z_u : Tensor (n_u, d), optional
        Projections of unlabelled cells.
    temperature : float
        tau > 0.
    lambda_penalty : float
        lambda >= 0, weight of the entropy term.

    Returns
    -------
    loss, nt_xent, entropy : Tensor
        ``loss = nt_xent + lambda * entropy`` (scalars; entropy is 0 without unlabelled cells).

    Notes
    -----
    With z_hat = z / (||z|| + 1e-8), Z = [z_hat_a; z_hat_b] (2B x d) and S = Z Z^T / tau,
    ``nt_xent = (1/2B) sum_u -log softmax_{v != u}(S_u)[partner(u)]`` (self-similarity masked
    with -inf, a stable log-softmax). For an unlabelled cell w, p_w = softmax(z_hat_w Z^T / tau)
    over the 2B labelled cells and ``entropy = mean_w -sum_v p_wv log(p_wv + 1e-8)``. Half
    precision is upcast to float32.

    Examples
    --------
    >>> import torch
    >>> z = torch.randn(4, 8, generator=torch.Generator().manual_seed(0))
    >>> loss, con, ent = lcl_loss(z, z + 0.01)
    >>> bool(con < 1.5), float(ent)
    (True, 0.0)
    """
    check_tensor(z_a, "z_a", ndim=2)
    check_tensor(z_b, "z_b", ndim=2)
    if z_a.shape != z_b.shape:
        raise ValueError(f"z_a and z_b must have the same shape, got {tuple(z_a.shape)} and {tuple(z_b.shape)}")
    if z_a.shape[0] < 1:
        raise ValueError("z_a is empty; expected at least one positive pair")
    tau = check_scalar_in(temperature, "temperature", low=0.0, low_inclusive=False)
    lam = check_scalar_in(lambda_penalty, "lambda_penalty", low=0.0)
    dtype = torch.promote_types(z_a.dtype, torch.float32)
    B = z_a.shape[0]
    Z = _normalize(torch.cat([z_a, z_b]).to(dtype))
    S = Z @ Z.T / tau
    S = S.masked_fill(torch.eye(2 * B, dtype=torch.bool, device=S.device), float("-inf"))
    partner = torch.cat([torch.arange(B, 2 * B), torch.arange(0, B)]).to(S.device)
    nt_xent = nn.functional.cross_entropy(S, partner)
    entropy = S.new_zeros(())
    if z_u is not None and z_u.numel():
        check_tensor(z_u, "z_u", ndim=2)
        if z_u.shape[1] != z_a.shape[1]:
            raise ValueError(f"z_u must have {z_a.shape[1]} columns, got {z_u.shape[1]}")
        p = torch.softmax(_normalize(z_u.to(dtype)) @ Z.T / tau, dim=1)
        entropy = -(p * torch.log(p + ENTROPY_EPS)).sum(dim=1).mean()
    return nt_xent + lam * entropy, nt_xent, entropy


def _warmup_cosine(progress: float, warmup: float, total: float) -> float:
    """LR multiplier at fractional epoch ``progress``: linear from 0, then cosine to 0."""
    if warmup > 0 and progress < warmup:
        return progress / warmup
    if total <= warmup:
        return 1.0
    return 0.5 * (1.0 + math.cos(math.pi * min(1.0, (progress - warmup) / (total - warmup))))


@contextmanager
def _torch_threads(n: int):
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _rows(X, index: np.ndarray) -> torch.Tensor:
    block = X[index]
    if sp.issparse(block):
        block = block.toarray()
    return torch.from_numpy(np.ascontiguousarray(block, dtype=np.float32))


class LCL(TransformerMixin, BaseEstimator):
    """Lineage-aware contrastive learning: an embedding of cells in which clone-mates coincide.

    Cells that share a lineage barcode are positive pairs for an NT-Xent loss (SimCLR with
    clones as the augmentation); processes that differ between clone-mates (cell cycle,
    transient states) are averaged out, and the lineage- and fate-predictive signal remains.
    Unbarcoded cells enter through an entropy penalty that pulls each onto one labelled cell.

    Parameters
    ----------
    hidden_dims : tuple of int
        Base encoder widths; the last one is the embedding dimension of ``transform``.
    embedding_dim : int
        Projection-head width (the space of the loss).
    temperature : float
        tau of the NT-Xent and entropy terms.
    batch_size : int
        B, positive pairs per batch.
    size_factor : float in (0, 1]
        Share of each clone's pairs used per epoch.
    n_unlabeled_per_batch : int
        Unlabelled cells per batch.
    lambda_penalty : float
        Weight of the entropy penalty (0 switches it off).
    lr, weight_decay : float
        AdamW settings (biases are not decayed).
    max_epochs, warmup_epochs : int
        Linear warm-up from 0, then cosine decay to 0 at ``max_epochs``.
    grad_accum_steps : int
        Batches whose gradients are summed per optimiser step.
    val_fraction : float in [0, 1)
        Share of the batches held out to monitor the loss (lambda = 0 there); 0 monitors the
        training loss.
    patience, min_delta : int, float
        Early stopping on the monitored loss.
    bn_mode : {"concat", "separate"}
        "concat": one forward pass over anchors, partners and unlabelled cells (shared
        BatchNorm statistics). "separate": three passes, as in the official code.
    resample_each_epoch : bool
        Draw a new batch list every epoch (the official code fixes it).
    n_threads : int
        torch threads during ``fit`` / ``transform`` (1 is fastest for these small MLPs on CPU).
    random_state : int
        Seeds the weights (torch), the batch list and the validation split.
    device : str or torch.device
        Where the encoder trains and embeds: ``"cpu"`` (default), ``"cuda"``, ``"cuda:N"`` or
        ``"auto"``. Inputs and embeddings stay numpy; the pair batches are drawn on the CPU.
    verbose : bool
        Print the loss per epoch.

    Attributes
    ----------
    encoder_ : LCLEncoder
        The trained network (eval mode).
    history_ : dict
        Per-epoch ``train_loss``, ``train_nt_xent``, ``train_entropy``, ``val_loss``, ``lr``.
    n_batches_per_epoch_ : int
        Batches per epoch (train and validation).
    sampler_ : LineagePairSampler
    n_features_in_ : int
    n_epochs_ : int
        Epochs run (early stopping may end training before ``max_epochs``).
    best_epoch_ : int
        Epoch with the lowest monitored loss (the returned weights are the last epoch's).

    References
    ----------
    Yang, Wang, Lin. "Leveraging Lineage Barcodes as Natural Augmentations for Contrastive
    Learning of Cell Fate in scRNA-seq Data", ICML 2026.

    Examples
    --------
    >>> from icml26.lcl import LCL, simulate_lineage_tracing
    >>> data = simulate_lineage_tracing(n_clones=20, seed=0)
    >>> model = LCL(hidden_dims=(32, 16), embedding_dim=8, batch_size=10, max_epochs=2,
    ...             warmup_epochs=0).fit(data.X, data.clone)
    >>> model.transform(data.X).shape == (data.n_cells, 16)
    True
    """

    def __init__(self, hidden_dims=(1024, 256, 64), embedding_dim=32, temperature=0.5, batch_size=50,
                 size_factor=0.3, n_unlabeled_per_batch=5, lambda_penalty=0.05, lr=3e-4,
                 weight_decay=1e-6, max_epochs=220, warmup_epochs=10, grad_accum_steps=5,
                 val_fraction=0.2, patience=10, min_delta=1e-3, bn_mode="concat",
                 resample_each_epoch=False, n_threads=1, random_state=3407, device="cpu",
                 verbose=False):
        self.hidden_dims = hidden_dims
        self.embedding_dim = embedding_dim
        self.temperature = temperature
        self.batch_size = batch_size
        self.size_factor = size_factor
        self.n_unlabeled_per_batch = n_unlabeled_per_batch
        self.lambda_penalty = lambda_penalty
        self.lr = lr
        self.weight_decay = weight_decay
        self.max_epochs = max_epochs
        self.warmup_epochs = warmup_epochs
        self.grad_accum_steps = grad_accum_steps
        self.val_fraction = val_fraction
        self.patience = patience
        self.min_delta = min_delta
        self.bn_mode = bn_mode
        self.resample_each_epoch = resample_each_epoch
        self.n_threads = n_threads
        self.random_state = random_state
        self.device = device
        self.verbose = verbose

    # -- validation -----------------------------------------------------------------------
    def _check_params(self) -> None:
        check_scalar_in(self.temperature, "temperature", low=0.0, low_inclusive=False)
        check_scalar_in(self.size_factor, "size_factor", low=0.0, high=1.0, low_inclusive=False)
        check_scalar_in(self.lambda_penalty, "lambda_penalty", low=0.0)
        check_scalar_in(self.lr, "lr", low=0.0, low_inclusive=False)
        check_scalar_in(self.weight_decay, "weight_decay", low=0.0)
        check_scalar_in(self.val_fraction, "val_fraction", low=0.0, high=1.0, high_inclusive=False)
        check_scalar_in(self.min_delta, "min_delta", low=0.0)
        for name in ("batch_size", "max_epochs", "grad_accum_steps", "patience", "n_threads",
                     "embedding_dim"):
            check_int(getattr(self, name), name, min_value=1)
        check_int(self.warmup_epochs, "warmup_epochs", min_value=0)
        check_int(self.n_unlabeled_per_batch, "n_unlabeled_per_batch", min_value=0)
        check_choice(self.bn_mode, "bn_mode", ["concat", "separate"])
        if len(tuple(self.hidden_dims)) < 1:
            raise ValueError("hidden_dims must hold at least one width")

    def _prepare(self, X, clone_ids, X_unlabeled):
        X, clone_ids = unpack_anndata(X, clone_ids, "X")
        if X_unlabeled is not None:
            X_unlabeled, _ = unpack_anndata(X_unlabeled, (), "X_unlabeled")
        X = as_expression_matrix(X, "X")
        if clone_ids is None:
            raise ValueError("LCL requires y to be passed, but the target y is None: clone_ids is "
                             "one clone (barcode) label per row of X (None / NaN for unbarcoded cells)")
        if X.shape[0] < 4:
            raise ValueError(f"X has too few cells, n_samples={X.shape[0]}; LCL needs at least 4 (2 clones of 2 cells)")
        clone_ids = np.asarray(clone_ids, dtype=object)
        if clone_ids.ndim != 1:
            clone_ids = clone_ids.ravel() if clone_ids.ndim == 2 and 1 in clone_ids.shape else clone_ids
        if clone_ids.ndim != 1 or clone_ids.shape[0] != X.shape[0]:
            raise ValueError(f"clone_ids must have one label per row of X: X has {X.shape[0]} rows, "
                             f"clone_ids has shape {clone_ids.shape}")
        has_label = labelled_mask(clone_ids)
        if X_unlabeled is not None:
            X_unlabeled = as_expression_matrix(X_unlabeled, "X_unlabeled")
            if X_unlabeled.shape[1] != X.shape[1]:
                raise ValueError(f"X_unlabeled must have the same number of genes as X "
                                 f"({X.shape[1]}), got {X_unlabeled.shape[1]}")
            if not has_label.all():
                raise ValueError(f"clone_ids has {int((~has_label).sum())} missing labels while "
                                 f"X_unlabeled is given; pass the unbarcoded cells in one place only")
        elif not has_label.all():
            X_unlabeled = X[np.flatnonzero(~has_label)]
        X_lab = X if has_label.all() else X[np.flatnonzero(has_label)]
        return X_lab, clone_ids[has_label], X_unlabeled

    # -- training -------------------------------------------------------------------------
    def _step_loss(self, encoder, xa, xb, xu, lam):
        B = xa.shape[0]
        if self.bn_mode == "concat":
            _, z = encoder(torch.cat([xa, xb, xu]) if xu is not None else torch.cat([xa, xb]))
            za, zb, zu = z[:B], z[B:2 * B], (z[2 * B:] if xu is not None else None)
        else:
            za, zb = encoder(xa)[1], encoder(xb)[1]
            zu = encoder(xu)[1] if xu is not None else None
        return lcl_loss(za, zb, zu, temperature=self.temperature, lambda_penalty=lam)

    def fit(self, X, clone_ids=None, X_unlabeled=None):
        """Train the encoder on clone-mate pairs (and the unlabelled cells, if any).

        Parameters
        ----------
        X : ndarray, sparse matrix, AnnData, or path to ``.h5ad`` (n_cells, n_genes)
            Log-normalised expression. For AnnData, ``.X`` is used and, when ``clone_ids`` is
            None, ``obs['clone_id']``.
        clone_ids : array-like (n_cells,)
            Clone labels; None / NaN mark unbarcoded cells, which join the unlabelled pool
            (only allowed when ``X_unlabeled`` is None).
        X_unlabeled : matrix or AnnData (n_unlabeled, n_genes), optional
            Cells without barcodes (held-out cells, or another dataset) for the entropy term.

        Returns
        -------
        self
        """
        self._check_params()
        if isinstance(X, (str,)) or hasattr(X, "__fspath__"):
            from .data import read_lineage_h5ad
            X = read_lineage_h5ad(X)
        X, labels, X_u = self._prepare(X, clone_ids, X_unlabeled)
        n_pool = 0 if X_u is None else X_u.shape[0]
        n_u = self.n_unlabeled_per_batch if self.lambda_penalty > 0 else 0
        if n_u > n_pool:
            if n_pool:
                warnings.warn(f"n_unlabeled_per_batch={n_u} exceeds the {n_pool} unlabelled cells; "
                              f"clamped to {n_pool}", UserWarning, stacklevel=2)
            n_u = n_pool
        if self.bn_mode == "separate" and n_u == 1:
            raise ValueError("bn_mode='separate' with one unlabelled cell per batch cannot run "
                             "BatchNorm in train mode; use n_unlabeled_per_batch >= 2 or bn_mode='concat'")
        seeds = np.random.SeedSequence(int(self.random_state)).spawn(2)
        sampler = LineagePairSampler(labels, batch_size=self.batch_size, size_factor=self.size_factor,
                                     n_unlabeled=n_u, unlabeled_pool=np.arange(n_pool),
                                     resample_each_epoch=self.resample_each_epoch,
                                     seed=int(seeds[0].generate_state(1)[0]))
        if sampler.batch_size_ < 2 and self.bn_mode == "separate":
            raise ValueError("bn_mode='separate' needs at least 2 pairs per batch")
        split_rng = np.random.default_rng(seeds[1])
        device = resolve_device(self.device)
        with _torch_threads(int(self.n_threads)), seeded_rng(int(self.random_state), device):
            encoder = LCLEncoder(X.shape[1], tuple(self.hidden_dims), int(self.embedding_dim)).to(device)
            decay = [p for n, p in encoder.named_parameters() if not n.endswith("bias")]
            no_decay = [p for n, p in encoder.named_parameters() if n.endswith("bias")]
            optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": self.weight_decay},
                                           {"params": no_decay, "weight_decay": 0.0}], lr=self.lr)
            history = {k: [] for k in ("train_loss", "train_nt_xent", "train_entropy", "val_loss", "lr")}
            best, best_epoch, waited = math.inf, 0, 0
            split = None
            for epoch in range(int(self.max_epochs)):
                batches = sampler.epoch_batches(epoch)
                if split is None or self.resample_each_epoch:
                    n_val = int(round(self.val_fraction * len(batches))) if len(batches) > 1 else 0
                    perm = split_rng.permutation(len(batches))
                    split = (np.sort(perm[n_val:]), np.sort(perm[:n_val]))
                train_idx, val_idx = split
                sums = self._train_epoch(encoder, optimizer, X, X_u, batches, train_idx, epoch, device)
                for key, value in zip(("train_loss", "train_nt_xent", "train_entropy", "lr"), sums):
                    history[key].append(value)
                val = self._val_loss(encoder, X, batches, val_idx, device) if len(val_idx) else math.nan
                history["val_loss"].append(val)
                monitored = val if len(val_idx) else sums[0]
                if self.verbose:
                    print(f"epoch {epoch}: train {sums[0]:.4f} val {val:.4f}")
                if not math.isfinite(monitored):
                    raise FloatingPointError(f"LCL loss became {monitored} at epoch {epoch}; "
                                             f"lower lr or raise temperature")
                if monitored < best - self.min_delta:
                    best, best_epoch, waited = monitored, epoch, 0
                else:
                    waited += 1
                    if waited >= self.patience:
                        break
            encoder.eval()
        self.encoder_ = encoder
        self.device_ = device
        self.history_ = history
        self.sampler_ = sampler
        self.n_batches_per_epoch_ = sampler.n_batches
        self.n_epochs_ = len(history["train_loss"])
        self.best_epoch_ = best_epoch
        self.n_features_in_ = X.shape[1]
        return self

    def _train_epoch(self, encoder, optimizer, X, X_u, batches, train_idx, epoch, device):
        encoder.train()
        totals = np.zeros(3)
        accum = int(self.grad_accum_steps)
        optimizer.zero_grad(set_to_none=True)
        lr = self.lr
        for position, b in enumerate(train_idx):
            ia, ib, iu = batches[b]
            if position % accum == 0:
                progress = epoch + position / max(1, len(train_idx))
                lr = self.lr * _warmup_cosine(progress, self.warmup_epochs, self.max_epochs)
                for group in optimizer.param_groups:
                    group["lr"] = lr
            xa, xb = _rows(X, ia).to(device), _rows(X, ib).to(device)
            xu = _rows(X_u, iu).to(device) if len(iu) else None
            loss, con, ent = self._step_loss(encoder, xa, xb, xu, self.lambda_penalty)
            (loss / accum).backward()
            totals += [float(loss.detach()), float(con.detach()), float(ent.detach())]
            if (position + 1) % accum == 0 or position + 1 == len(train_idx):
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)
        n = max(1, len(train_idx))
        return (*(totals / n), lr)

    @torch.no_grad()
    def _val_loss(self, encoder, X, batches, val_idx, device) -> float:
        encoder.eval()
        losses = []
        for b in val_idx:
            ia, ib, _ = batches[b]
            xa, xb = _rows(X, ia).to(device), _rows(X, ib).to(device)
            losses.append(float(self._step_loss(encoder, xa, xb, None, 0.0)[0]))
        return float(np.mean(losses))

    # -- inference ------------------------------------------------------------------------
    def transform(self, X, space: str = "base", batch_size: int = 4096) -> np.ndarray:
        """Embed cells: the base-encoder output h (``space="base"``) or the projection z.

        Parameters
        ----------
        X : ndarray, sparse matrix or AnnData (n_cells, n_genes)
        space : {"base", "projection"}
        batch_size : int
            Rows densified and encoded at a time.

        Returns
        -------
        ndarray (n_cells, hidden_dims[-1]) or (n_cells, embedding_dim), float32
        """
        check_is_fitted(self, "encoder_")
        check_choice(space, "space", ["base", "projection"])
        X, _ = unpack_anndata(X, (), "X")
        X = as_expression_matrix(X, "X")
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but LCL is expecting {self.n_features_in_} "
                             f"features as input (genes)")
        out = []
        device = next(self.encoder_.parameters()).device          # where the encoder lives
        with _torch_threads(int(self.n_threads)), torch.no_grad():
            self.encoder_.eval()
            for start in range(0, X.shape[0], batch_size):
                h, z = self.encoder_(_rows(X, np.arange(start, min(start + batch_size, X.shape[0]))).to(device))
                out.append(to_numpy(h if space == "base" else z))
        return np.concatenate(out).astype(np.float32)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.input_tags.sparse = True
        tags.transformer_tags.preserves_dtype = ["float32"]
        return tags
