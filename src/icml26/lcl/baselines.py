"""Baselines of the LCL paper: an scVI-like negative-binomial VAE (``NBVAE``) and PCA.

scvi-tools itself is not a dependency: with this project's pins (torch 2.13, pandas 3.1)
``pip install scvi-tools`` resolves only to scvi-tools 1.4.2 with 45 further packages (lightning,
pyro-ppl, tensorboard, scanpy, ...) and, unconstrained, downgrades the shared pandas 3.1 to 2.3;
the anndata release it can then use (0.12.6) predates pandas 3. ``NBVAE`` re-implements scVI's
default model instead (Lopez et al., Nature Methods 2018; scvi-tools ``SCVI`` defaults):
log1p input, encoder/decoder of ``n_layers`` x ``hidden`` (Linear, BatchNorm, ReLU, dropout 0.1
in the encoder), Gaussian latent, observed library size, softmax decoder, gene-wise
negative-binomial dispersion, Adam (lr 1e-3, eps 0.01, weight decay 1e-6), batches of 128,
KL warm-up, and the posterior mean as the embedding.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.decomposition import PCA
from sklearn.utils.validation import check_is_fitted
from torch import nn

from icml26.core.device import resolve_device, seeded_rng, to_numpy
from icml26.core.validation import check_int, check_scalar_in

from .data import _check_counts, unpack_anndata
from .lcl import _torch_threads

__all__ = ["NBVAE", "pca_embedding", "nb_log_likelihood"]

VAR_EPS = 1e-4  # scVI adds this to the encoder's variance


def nb_log_likelihood(x: torch.Tensor, mu: torch.Tensor, theta: torch.Tensor, eps: float = 1e-8):
    """Negative-binomial log-likelihood with mean ``mu`` and inverse dispersion ``theta``
    (elementwise; scVI's ``log_nb_positive``)."""
    log_theta_mu = torch.log(theta + mu + eps)
    return (theta * (torch.log(theta + eps) - log_theta_mu) + x * (torch.log(mu + eps) - log_theta_mu)
            + torch.lgamma(x + theta) - torch.lgamma(theta) - torch.lgamma(x + 1))


def _fc(n_in: int, hidden: int, n_layers: int, dropout: float) -> nn.Sequential:
    layers, width = [], n_in
    for _ in range(n_layers):
        layers += [nn.Linear(width, hidden), nn.BatchNorm1d(hidden, eps=1e-3, momentum=0.01), nn.ReLU()]
        if dropout > 0:
            layers.append(nn.Dropout(dropout))
        width = hidden
    return nn.Sequential(*layers)


class _VAE(nn.Module):
    def __init__(self, n_genes: int, n_latent: int, hidden: int, n_layers: int, dropout: float):
        super().__init__()
        self.encoder = _fc(n_genes, hidden, n_layers, dropout)
        self.z_mean = nn.Linear(hidden, n_latent)
        self.z_logvar = nn.Linear(hidden, n_latent)
        self.decoder = _fc(n_latent, hidden, n_layers, 0.0)
        self.scale = nn.Linear(hidden, n_genes)
        self.log_theta = nn.Parameter(torch.randn(n_genes))

    def encode(self, x):
        q = self.encoder(torch.log1p(x))
        return self.z_mean(q), torch.exp(self.z_logvar(q)) + VAR_EPS

    def loss(self, x, kl_weight: float):
        mean, var = self.encode(x)
        z = mean + var.sqrt() * torch.randn_like(mean)
        library = x.sum(dim=1, keepdim=True)
        mu = library * torch.softmax(self.scale(self.decoder(z)), dim=1)
        recon = -nb_log_likelihood(x, mu, torch.exp(self.log_theta)).sum(dim=1)
        kl = 0.5 * (var + mean ** 2 - 1.0 - torch.log(var)).sum(dim=1)
        return (recon + kl_weight * kl).mean()


class NBVAE(TransformerMixin, BaseEstimator):
    """scVI-like negative-binomial variational autoencoder on raw counts (the paper's scVI baseline).

    Parameters
    ----------
    n_latent : int
        Latent dimension (scVI default 10).
    hidden, n_layers : int
        Width and depth of encoder and decoder.
    dropout : float
        Encoder dropout.
    max_epochs : int
    kl_warmup_epochs : int or None
        Epochs over which the KL weight rises linearly to 1; None = ``max_epochs`` (scVI's
        default for data sets under 20,000 cells, where max_epochs = KL warm-up = 400).
    lr, weight_decay, batch_size : float, float, int
    n_threads, random_state : int
    device : str or torch.device, default "cpu"
        Where the VAE trains and encodes (``"cuda"``, ``"cuda:N"``, ``"auto"``); counts in and
        embeddings out stay numpy. The batch order is drawn on the CPU; the reparameterisation
        noise and the dropout masks on ``device``.

    Attributes
    ----------
    module_ : torch.nn.Module
    history_ : dict with per-epoch ``loss``
    n_features_in_ : int

    References
    ----------
    Lopez, Regier, Cole, Jordan, Yosef. "Deep generative modeling for single-cell
    transcriptomics", Nature Methods 2018.

    Examples
    --------
    >>> import numpy as np
    >>> counts = np.random.default_rng(0).poisson(2.0, size=(64, 20))
    >>> NBVAE(n_latent=2, hidden=16, max_epochs=2).fit_transform(counts).shape
    (64, 2)
    """

    def __init__(self, n_latent=10, hidden=128, n_layers=2, dropout=0.1, max_epochs=200,
                 kl_warmup_epochs=None, lr=1e-3, weight_decay=1e-6, batch_size=128, n_threads=1,
                 random_state=0, device="cpu"):
        self.n_latent = n_latent
        self.hidden = hidden
        self.n_layers = n_layers
        self.dropout = dropout
        self.max_epochs = max_epochs
        self.kl_warmup_epochs = kl_warmup_epochs
        self.lr = lr
        self.weight_decay = weight_decay
        self.batch_size = batch_size
        self.n_threads = n_threads
        self.random_state = random_state
        self.device = device

    @staticmethod
    def _counts(counts):
        counts, _ = unpack_anndata(counts, (), "counts")
        mat = _check_counts(counts, "counts")
        return mat.toarray() if sp.issparse(mat) else mat

    def fit(self, counts, y=None):
        """Fit on raw counts (n_cells, n_genes), dense, sparse or AnnData (``.X``)."""
        for name in ("n_latent", "hidden", "n_layers", "max_epochs", "batch_size", "n_threads"):
            check_int(getattr(self, name), name, min_value=1)
        check_scalar_in(self.dropout, "dropout", low=0.0, high=1.0, high_inclusive=False)
        check_scalar_in(self.lr, "lr", low=0.0, low_inclusive=False)
        warmup = self.max_epochs if self.kl_warmup_epochs is None else check_int(
            self.kl_warmup_epochs, "kl_warmup_epochs", min_value=0)
        device = resolve_device(self.device)
        X = torch.from_numpy(self._counts(counts).astype(np.float32)).to(device)
        if X.shape[0] < 2:
            raise ValueError(f"counts needs at least 2 cells, got {X.shape[0]}")
        history = {"loss": []}
        with _torch_threads(int(self.n_threads)), seeded_rng(int(self.random_state), device):
            module = _VAE(X.shape[1], self.n_latent, self.hidden, self.n_layers, self.dropout).to(device)
            opt = torch.optim.Adam(module.parameters(), lr=self.lr, eps=0.01, weight_decay=self.weight_decay)
            gen = torch.Generator().manual_seed(int(self.random_state))
            n = X.shape[0]
            for epoch in range(int(self.max_epochs)):
                module.train()
                kl_weight = 1.0 if warmup == 0 else min(1.0, epoch / warmup)
                order = torch.randperm(n, generator=gen)
                total = 0.0
                for start in range(0, n, int(self.batch_size)):
                    idx = order[start:start + int(self.batch_size)]
                    if idx.numel() < 2:  # BatchNorm needs two cells; scVI drops such a batch too
                        continue
                    loss = module.loss(X[idx], kl_weight)
                    opt.zero_grad(set_to_none=True)
                    loss.backward()
                    opt.step()
                    total += float(loss.detach()) * idx.numel()
                if not math.isfinite(total):
                    raise FloatingPointError(f"NBVAE loss became {total} at epoch {epoch}")
                history["loss"].append(total / n)
        self.module_ = module.eval()
        self.device_ = device
        self.history_ = history
        self.n_features_in_ = X.shape[1]
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.positive_only = True
        tags.transformer_tags.preserves_dtype = ["float32"]
        return tags

    def transform(self, counts) -> np.ndarray:
        """Posterior means of the latent variables (n_cells, n_latent)."""
        check_is_fitted(self, "module_")
        X = torch.from_numpy(self._counts(counts).astype(np.float32))
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"counts has {X.shape[1]} features, but NBVAE is expecting "
                             f"{self.n_features_in_} features as input (genes)")
        with _torch_threads(int(self.n_threads)), torch.no_grad():
            device = next(self.module_.parameters()).device
            return to_numpy(self.module_.encode(X.to(device))[0])


def pca_embedding(X_train, X_other=(), n_components: int = 10, seed: int = 0):
    """PCA fitted on ``X_train``; returns the train embedding and that of each array in ``X_other``."""
    X_train = X_train.toarray() if sp.issparse(X_train) else np.asarray(X_train)
    pca = PCA(n_components=n_components, random_state=seed).fit(X_train)
    return [pca.transform(X_train)] + [pca.transform(x.toarray() if sp.issparse(x) else x) for x in X_other]
