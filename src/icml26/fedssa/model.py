"""FedSSA's client model and its losses: a VGAE-style semantic encoder, a feature decoder, a
GPR-style learnable polynomial filter (the spectral GNN) and a linear classifier; class-wise
Gaussians of the latent codes and the closed-form divergences the server and clients use.

Notes
-----
Paper notation -> code: ``q_φ(z|X,A)`` -> ``FedSSANet.encode``; ``p_θ(x|y,z)`` ->
``FedSSANet.decoder``; ``g_γ(λ) = Σ_k γ_k (1-λ)^k`` -> :class:`PolyFilter`; ``N(μ_m^c, σ_m^c²)``
-> :func:`classwise_gaussians`. The layer layout (one propagation in the encoder, a one-hidden-layer
decoder, PPR initialisation of γ) is a Resolution (not from the paper).

References
----------
Yu, Wan, Chen, Han, Gong. "Heterogeneity-Aware Knowledge Sharing for Graph Federated Learning"
(FedSSA), ICML 2026, arXiv:2601.21589.
Chien, Peng, Li, Milenkovic. "Adaptive Universal Generalized PageRank Graph Neural Network"
(GPR-GNN), ICLR 2021.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .spectral import propagate, sym_spmm

__all__ = ["PolyFilter", "FedSSANet", "classwise_gaussians", "gaussian_kl", "gaussian_w2",
           "moment_match", "elbo_loss", "VAR_FLOOR", "LOGVAR_CLAMP"]

VAR_FLOOR = 1e-6
LOGVAR_CLAMP = 10.0
GAMMA_MAX = 10.0


class PolyFilter(nn.Module):
    """Learnable polynomial graph filter ``Z̃ = Σ_{k=0}^K γ_k Â^k Z`` (GPR-GNN style).

    ``γ`` starts from personalised-PageRank weights ``γ_k = α(1-α)^k`` (k < K), ``γ_K = (1-α)^K``.
    Its frequency response on the normalised Laplacian is ``g(λ) = Σ_k γ_k (1-λ)^k``.

    Parameters
    ----------
    K : int
        Polynomial order.
    alpha : float
        PPR teleport probability for the initialisation.

    References
    ----------
    Yu, Wan, Chen, Han, Gong, "Heterogeneity-Aware Knowledge Sharing for Graph Federated
    Learning" (FedSSA), ICML 2026, arXiv:2601.21589 (the learnable spectral filter whose
    coefficients carry a client's structural knowledge). Chien, Peng, Li, Milenkovic, "Adaptive
    Universal Generalized PageRank Graph Neural Network" (GPR-GNN), ICLR 2021 (the polynomial
    filter and its PPR initialisation).

    Examples
    --------
    >>> import torch
    >>> f = PolyFilter(K=2, alpha=0.5)
    >>> [round(v, 3) for v in f.gamma.tolist()]
    [0.5, 0.25, 0.25]
    >>> round(float(f.frequency_response(torch.tensor([0.0]))), 3)
    1.0
    """

    def __init__(self, K: int = 10, alpha: float = 0.1):
        super().__init__()
        if K < 0:
            raise ValueError(f"K must be >= 0, got {K}")
        if not 0.0 < alpha <= 1.0:
            raise ValueError(f"alpha must be in (0, 1], got {alpha}")
        self.K = K
        init = [alpha * (1 - alpha) ** k for k in range(K)] + [(1 - alpha) ** K]
        self.gamma = nn.Parameter(torch.tensor(init, dtype=torch.float32))

    def forward(self, z: torch.Tensor, adj: torch.Tensor) -> torch.Tensor:  # z: (n, d)
        out = self.gamma[0] * z
        for k in range(1, self.K + 1):
            z = sym_spmm(adj, z)
            out = out + self.gamma[k] * z
        return out

    def frequency_response(self, lam: torch.Tensor) -> torch.Tensor:
        """``g(λ) = Σ_k γ_k (1-λ)^k`` at the given eigenvalues."""
        lam = torch.as_tensor(lam, dtype=self.gamma.dtype, device=self.gamma.device)
        powers = (1.0 - lam)[..., None] ** torch.arange(self.K + 1, dtype=lam.dtype, device=lam.device)
        return powers @ self.gamma

    @torch.no_grad()
    def clip_(self, max_abs: float = GAMMA_MAX) -> None:
        """Keep ``||γ||∞ <= max_abs`` (high-pass learning can blow γ up)."""
        self.gamma.clamp_(-max_abs, max_abs)


class FedSSANet(nn.Module):
    """FedSSA's client network: encoder -> (sampled) latent -> polynomial filter -> classifier.

    ``H = ReLU(X W_1)`` (``encoder="mlp"``, default) or ``ReLU(Â X W_1)`` (``encoder="gcn"``),
    ``μ = H W_μ``, ``log σ² = H W_σ`` (clamped to [-10, 10]);
    ``z = μ + σ ⊙ ε`` in training (``variational=True``), ``z = μ`` otherwise;
    ``logits = (Σ_k γ_k Â^k z) W_c + b_c``. The decoder ``x̂ = MLP([z; onehot(y)])`` serves the
    ELBO (:func:`elbo_loss`).

    Parameters
    ----------
    n_features, n_classes : int
        ``n_classes = 1`` gives one logit (binary task, BCE).
    hidden, latent : int
        ``d_h`` and ``d_z``.
    K : int
        Filter order.
    alpha : float
        PPR initialisation of the filter.
    dropout : float
        Dropout on the input features.
    likelihood : {"gaussian", "bernoulli"}
        Decoder likelihood (Bernoulli for binary bag-of-words features).
    variational : bool
        Sample z in training; False gives the deterministic backbone the baselines use.
    encoder : {"mlp", "gcn"}
        Whether the encoder propagates once over Â before the filter. "gcn" is the VGAE-style
        layout of the reconstruction; "mlp" (default, a deviation) leaves all propagation to the
        learnable filter: a fixed low-pass step before it cannot be undone on heterophilic graphs
        (seed 0 of the dual-heterogeneity federation, Local: 68.0 % with "gcn", 83.9 % with "mlp";
        heterophilic clients 38.9 % vs 71.1 %).

    References
    ----------
    Yu, Wan, Chen, Han, Gong, "Heterogeneity-Aware Knowledge Sharing for Graph Federated
    Learning" (FedSSA), ICML 2026, arXiv:2601.21589. Chien, Peng, Li, Milenkovic, "Adaptive
    Universal Generalized PageRank Graph Neural Network" (GPR-GNN), ICLR 2021 (the filter).
    Kingma & Welling, "Auto-Encoding Variational Bayes", ICLR 2014 (the variational encoder and
    reparameterised ``z``).

    Examples
    --------
    >>> import torch
    >>> from icml26.fedssa.spectral import normalized_adjacency
    >>> net = FedSSANet(4, 3, hidden=8, latent=4, K=2)
    >>> adj = normalized_adjacency(torch.tensor([[0, 1], [1, 2]]), 3)
    >>> net(torch.randn(3, 4), adj)["logits"].shape
    torch.Size([3, 3])
    """

    def __init__(self, n_features: int, n_classes: int, hidden: int = 64, latent: int = 32,
                 K: int = 10, alpha: float = 0.1, dropout: float = 0.5,
                 likelihood: str = "gaussian", variational: bool = True, encoder: str = "mlp"):
        super().__init__()
        for name, value in (("n_features", n_features), ("n_classes", n_classes),
                            ("hidden", hidden), ("latent", latent)):
            if int(value) != value or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value}")
        if likelihood not in ("gaussian", "bernoulli"):
            raise ValueError(f"likelihood must be 'gaussian' or 'bernoulli', got {likelihood!r}")
        if encoder not in ("mlp", "gcn"):
            raise ValueError(f"encoder must be 'mlp' or 'gcn', got {encoder!r}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        self.n_classes = n_classes
        self.likelihood = likelihood
        self.variational = variational
        self.propagate_in_encoder = encoder == "gcn"
        self.dropout = dropout
        self.encoder = nn.Linear(n_features, hidden)
        self.mu = nn.Linear(hidden, latent)
        self.logvar = nn.Linear(hidden, latent)
        n_label = max(n_classes, 2)
        self.decoder = nn.Sequential(nn.Linear(latent + n_label, hidden), nn.ReLU(),
                                     nn.Linear(hidden, n_features))
        self.filter = PolyFilter(K, alpha)
        self.classifier = nn.Linear(latent, n_classes)

    def encode(self, x: torch.Tensor, adj: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(μ, log σ²)`` of ``q(z | X, A)``, each (n, d_z)."""
        x = F.dropout(x, self.dropout, self.training)
        hidden = self.encoder(x)
        if self.propagate_in_encoder:  # VGAE-style Â X W_1 (the bias is part of W_1)
            hidden = sym_spmm(adj, hidden)
        hidden = F.relu(hidden)
        return self.mu(hidden), self.logvar(hidden).clamp(-LOGVAR_CLAMP, LOGVAR_CLAMP)

    def forward(self, x: torch.Tensor, adj: torch.Tensor) -> dict:
        mu, logvar = self.encode(x, adj)
        if self.training and self.variational:
            z = mu + torch.randn_like(mu) * (0.5 * logvar).exp()
        else:
            z = mu
        filtered = self.filter(z, adj)
        logits = self.classifier(filtered)
        if self.n_classes == 1:
            logits = logits.squeeze(-1)
        return {"mu": mu, "logvar": logvar, "z": z, "filtered": filtered, "logits": logits}

    def decode(self, z: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        onehot = F.one_hot(y.long(), max(self.n_classes, 2)).to(z.dtype)
        return self.decoder(torch.cat([z, onehot], dim=-1))

    def parameter_groups(self) -> dict:
        """Names of the semantic part (φ, θ, W_c, b_c), the structural part (γ), the classifier
        head, and the parts only the ELBO uses (decoder θ and the log-variance head), which a
        deterministic network (``variational=False``) never trains."""
        names = [n for n, _ in self.named_parameters()]
        return {"structural": [n for n in names if n.startswith("filter.")],
                "semantic": [n for n in names if not n.startswith("filter.")],
                "head": [n for n in names if n.startswith("classifier.")],
                "variational": [n for n in names if n.startswith(("decoder.", "logvar."))]}


def _gaussian_nll(x: torch.Tensor, mean: torch.Tensor) -> torch.Tensor:
    """−log N(x; mean, I) per row."""
    return 0.5 * ((x - mean) ** 2).sum(-1) + 0.5 * x.shape[-1] * math.log(2 * math.pi)


def elbo_loss(net: FedSSANet, x: torch.Tensor, y: torch.Tensor, out: dict, mask: torch.Tensor,
              edge_index: torch.Tensor | None = None, decoder: str = "features",
              generator: torch.Generator | None = None, prior_means: torch.Tensor | None = None,
              prior_stds: torch.Tensor | None = None) -> torch.Tensor:
    """Negative ELBO over the labelled nodes: mean of ``−log p(x_i|y_i,z_i) + KL(q(z_i) || p(z_i|y_i))``.

    The prior is class-conditional, ``p(z | y = c) = N(prior_means[c], diag prior_stds[c]²)``,
    when ``prior_means`` and ``prior_stds`` (each (C, d_z)) are given, and ``N(0, I)`` otherwise
    (the M2 semi-supervised VAE form, whose z is meant to carry no label information).
    FedSSA passes the class-wise Gaussians of its semantic cluster as the prior (see
    :meth:`icml26.fedssa.FedSSAClient.extra_loss`); the prior is not differentiated.

    ``decoder="features+adjacency"`` adds a VGAE inner-product edge likelihood (observed edges
    against as many uniformly drawn node pairs). ``log p(y)`` is constant and left out.

    Examples
    --------
    >>> import torch
    >>> net = FedSSANet(3, 2, hidden=4, latent=2, K=1)
    >>> out = {"z": torch.zeros(2, 2), "mu": torch.zeros(2, 2), "logvar": torch.zeros(2, 2)}
    >>> x, y, mask = torch.zeros(2, 3), torch.tensor([0, 1]), torch.tensor([True, True])
    >>> standard = elbo_loss(net, x, y, out, mask)
    >>> same = elbo_loss(net, x, y, out, mask, prior_means=torch.zeros(2, 2), prior_stds=torch.ones(2, 2))
    >>> bool(torch.isclose(standard, same))
    True
    """
    if not bool(mask.any()):
        return out["mu"].sum() * 0.0
    if (prior_means is None) != (prior_stds is None):
        raise ValueError("prior_means and prior_stds must be given together")
    z, mu, logvar = out["z"][mask], out["mu"][mask], out["logvar"][mask]
    recon = net.decode(z, y[mask])
    if net.likelihood == "gaussian":
        nll = _gaussian_nll(x[mask], recon)
    else:
        nll = F.binary_cross_entropy_with_logits(recon, x[mask], reduction="none").sum(-1)
    if prior_means is None:
        kl = 0.5 * (mu ** 2 + logvar.exp() - 1.0 - logvar).sum(-1)
    else:
        if prior_means.shape != prior_stds.shape or prior_means.shape[-1] != mu.shape[-1]:
            raise ValueError(f"prior_means {tuple(prior_means.shape)} and prior_stds "
                             f"{tuple(prior_stds.shape)} must both be (n_classes, {mu.shape[-1]})")
        labels = y[mask].long()
        p_mu = prior_means.detach().to(mu.dtype)[labels]
        p_var = (prior_stds.detach().to(mu.dtype)[labels] ** 2).clamp_min(VAR_FLOOR)
        var = logvar.exp()
        kl = 0.5 * ((var + (mu - p_mu) ** 2) / p_var - 1.0 + p_var.log() - logvar).sum(-1)
    loss = (nll + kl).mean()
    if decoder == "features+adjacency" and edge_index is not None and edge_index.shape[1]:
        zz = out["z"]
        src, dst = edge_index
        neg = torch.randint(0, zz.shape[0], edge_index.shape, generator=generator).to(zz.device)
        pos_logit = (zz[src] * zz[dst]).sum(-1)
        neg_logit = (zz[neg[0]] * zz[neg[1]]).sum(-1)
        loss = loss + F.binary_cross_entropy_with_logits(pos_logit, torch.ones_like(pos_logit)) \
            + F.binary_cross_entropy_with_logits(neg_logit, torch.zeros_like(neg_logit))
    elif decoder not in ("features", "features+adjacency"):
        raise ValueError(f"decoder must be 'features' or 'features+adjacency', got {decoder!r}")
    return loss


def classwise_gaussians(mu: torch.Tensor, logvar: torch.Tensor, y: torch.Tensor,
                        mask: torch.Tensor, n_classes: int):
    """Moment-matched diagonal Gaussian of the latent codes of each class's labelled nodes.

    ``μ^c = mean_{i∈S_c} μ_i``, ``σ^c² = mean_{i∈S_c}(σ_i² + μ_i²) − μ^c²`` (floored at 1e-6),
    ``S_c`` = labelled nodes of class ``c``. Absent classes get mean 0, std 1 and count 0.

    Parameters
    ----------
    mu, logvar : Tensor of shape (n, d_z)
    y : Tensor of shape (n,)
    mask : BoolTensor of shape (n,)
        The labelled (train) nodes.
    n_classes : int

    Returns
    -------
    means, stds : Tensor of shape (n_classes, d_z)
    counts : Tensor of shape (n_classes,)

    Examples
    --------
    >>> import torch
    >>> mu = torch.tensor([[0.0], [2.0], [5.0]])
    >>> m, s, n = classwise_gaussians(mu, torch.zeros(3, 1), torch.tensor([0, 0, 1]),
    ...                               torch.tensor([True, True, False]), 2)
    >>> m[0].item(), round(s[0].item() ** 2, 4), n.tolist()
    (1.0, 2.0, [2.0, 0.0])
    """
    labels = y.long()[mask]
    onehot = F.one_hot(labels, n_classes).to(mu.dtype)  # (|T|, C)
    counts = onehot.sum(0)
    safe = counts.clamp_min(1.0)[:, None]
    means = onehot.T @ mu[mask] / safe
    second = onehot.T @ (logvar[mask].exp() + mu[mask] ** 2) / safe
    variances = (second - means ** 2).clamp_min(VAR_FLOOR)
    present = (counts > 0)[:, None]
    means = torch.where(present, means, torch.zeros_like(means))
    stds = torch.where(present, variances.sqrt(), torch.ones_like(variances))
    return means, stds, counts


def _same_shape(fn, **tensors):
    """The tensors (as tensors), after checking their shapes broadcast together; the error names
    the argument that does not, instead of torch's broadcasting message."""
    out = {}
    for k, v in tensors.items():
        try:
            out[k] = torch.as_tensor(v)
        except (TypeError, ValueError, RuntimeError) as exc:
            raise TypeError(f"{fn}: {k} must be a real tensor or array, got {type(v).__name__}") from exc
        if out[k].is_complex() or out[k].dtype == torch.bool:
            raise TypeError(f"{fn}: {k} must be real-valued, got dtype {out[k].dtype}")
    ref = out["mu1"].shape
    for k, v in out.items():
        try:
            ref = torch.broadcast_shapes(ref, v.shape)
        except RuntimeError:
            shapes = ", ".join(f"{n} {tuple(t.shape)}" for n, t in out.items())
            raise ValueError(f"{fn}: {k} has shape {tuple(v.shape)}, which does not broadcast with "
                             f"the others ({shapes})") from None
    return tuple(out.values())


def gaussian_kl(mu1, s1, mu2, s2) -> torch.Tensor:
    """``KL(N(mu1, s1²) || N(mu2, s2²))`` for diagonal Gaussians, summed over the last axis.

    Variances are floored at 1e-6. The four arguments must broadcast together.
    """
    mu1, s1, mu2, s2 = _same_shape("gaussian_kl", mu1=mu1, s1=s1, mu2=mu2, s2=s2)
    v1 = (s1 ** 2).clamp_min(VAR_FLOOR)
    v2 = (s2 ** 2).clamp_min(VAR_FLOOR)
    diff = mu1 - mu2
    return 0.5 * (v1 / v2 + diff ** 2 / v2 - 1.0 + v2.log() - v1.log()).sum(-1)


def gaussian_w2(mu1, s1, mu2, s2) -> torch.Tensor:
    """Squared 2-Wasserstein distance of diagonal Gaussians: ``||μ−μ'||² + ||σ−σ'||²``."""
    mu1, s1, mu2, s2 = _same_shape("gaussian_w2", mu1=mu1, s1=s1, mu2=mu2, s2=s2)
    s1 = s1.clamp_min(math.sqrt(VAR_FLOOR))
    s2 = s2.clamp_min(math.sqrt(VAR_FLOOR))
    return ((mu1 - mu2) ** 2).sum(-1) + ((s1 - s2) ** 2).sum(-1)


def _finite64(x, name):
    """``x`` as a finite float64 tensor, or an error naming ``name``."""
    if torch.is_tensor(x) and (x.is_complex() or x.dtype == torch.bool):
        raise TypeError(f"{name} must be real-valued, got dtype {x.dtype}")
    try:
        t = torch.as_tensor(x.detach() if torch.is_tensor(x) else np.asarray(x, dtype=np.float64),
                            dtype=torch.float64)
    except (TypeError, ValueError, RuntimeError) as exc:
        raise TypeError(f"{name} must be an array of real numbers, got {type(x).__name__}") from exc
    if not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name} contains NaN or infinity; expected finite values")
    return t


def moment_match(means, stds, weights):
    """One Gaussian matching the first two moments of a weighted mixture of diagonal Gaussians.

    ``μ = Σ w_m μ_m``, ``σ² = Σ w_m (σ_m² + μ_m²) − μ²`` with ``w`` normalised to sum to 1.

    Parameters
    ----------
    means, stds : array of shape (M, d)
    weights : array of shape (M,), non-negative with a positive sum

    Returns
    -------
    (mean, std) : Tensors of shape (d,)
    """
    means, stds, weights = (_finite64(means, "means"), _finite64(stds, "stds"),
                            _finite64(weights, "weights"))
    if means.ndim != 2 or means.shape[0] == 0:
        raise ValueError(f"means must have shape (M, d) with M >= 1, got {tuple(means.shape)}")
    if stds.shape != means.shape:
        raise ValueError(f"stds must have the shape of means {tuple(means.shape)}, got {tuple(stds.shape)}")
    if weights.ndim != 1 or weights.shape[0] != means.shape[0]:
        raise ValueError(f"weights must have shape ({means.shape[0]},), got {tuple(weights.shape)}")
    if bool((weights < 0).any()) or float(weights.sum()) <= 0:
        raise ValueError("weights must be non-negative with a positive sum")
    w = (weights / weights.sum())[:, None]
    mean = (w * means).sum(0)
    var = ((w * (stds ** 2 + means ** 2)).sum(0) - mean ** 2).clamp_min(VAR_FLOOR)
    return mean, var.sqrt()
