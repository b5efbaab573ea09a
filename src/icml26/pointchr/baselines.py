"""Lite backbones and baselines for PointCHR's comparison, pure torch (CPU, no CUDA ops).

* :class:`PointNetLite` — shared MLP + max-pool (Qi et al., 2017), optional curvature as a 4th
  input channel (the "curvature-as-feature" control) and optional CHR (``chr_stage``).
* :class:`DGCNNLite` — one EdgeConv layer on the k-NN graph (Wang et al., 2019), optional CHR.
* :class:`PointNet2Lite` — PointNet++ single-scale grouping, two set-abstraction stages (farthest
  point sampling + ball query; Qi et al., 2017b); CHR acts on the last stage's centroids with the
  curvature computed on those centroids.
* :class:`HyCoReLite` — the hyperbolic control without curvature awareness: a PointNet-lite
  encoder whose global feature lives on the Poincaré ball, trained with HyCoRe's part–whole
  entailment and contrastive regularisers (Montanaro et al., 2022). *Resolution (not from the
  HyCoRe code)*: parts are the 25 % of points nearest to a random anchor, the classifier is a
  Euclidean linear layer on ``log_0`` of the whole-cloud embedding (HyCoRe uses a hyperbolic MLR).

Max-pooling uses ``max(dim).values`` rather than ``amax``: the same values and, without ties,
the same gradient, at about half the backward cost.

References
----------
PointCHR: curvature-aware hyperbolic rectification for point cloud analysis (ICML 2026).
Qi, Su, Mo, Guibas. PointNet. CVPR 2017.
Wang, Sun, Liu, Sarma, Bronstein, Solomon. Dynamic graph CNN for learning on point clouds. TOG 2019.
Montanaro, Valsesia, Magli. Rethinking the compositionality of point clouds through
regularization in the hyperbolic space. NeurIPS 2022.
"""

from __future__ import annotations

import torch
from geoopt.manifolds.stereographic import math as stereo_math
from torch import nn
from torch.nn import functional as F

from icml26.core.validation import check_choice, check_int, check_scalar_in

from .chr import CurvatureHyperbolicRectifier
from .curvature import check_curvature, check_module_dtype, check_points, knn_indices, surface_variation
from .hyperbolic import PoincareOps

__all__ = ["PointNetLite", "DGCNNLite", "PointNet2Lite", "HyCoReLite", "farthest_point_sample", "ball_query", "EdgeConv", "SharedMLP", "shuffle_within_clouds"]


def shuffle_within_clouds(values: torch.Tensor, seed: int) -> torch.Tensor:
    """Permute ``values`` (B, N) independently within each cloud (the shuffled-κ control)."""
    gen = torch.Generator().manual_seed(int(seed))
    order = torch.argsort(torch.rand(values.shape, generator=gen), dim=1).to(values.device)
    return torch.gather(values, 1, order)


class SharedMLP(nn.Module):
    """Per-point MLP on channels-last features ``(..., C)``: Linear → BatchNorm (over all points) → act.

    Equivalent to PointNet's 1×1 convolutions; channels-last matmuls are ~1.7× faster on CPU.
    """

    def __init__(self, widths: list[int], negative_slope: float = 0.0):
        super().__init__()
        self.linears = nn.ModuleList(nn.Linear(a, b) for a, b in zip(widths[:-1], widths[1:]))
        self.norms = nn.ModuleList(nn.BatchNorm1d(b) for b in widths[1:])
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape[:-1]
        for linear, norm in zip(self.linears, self.norms):
            x = norm(linear(x).reshape(-1, linear.out_features)).reshape(*shape, -1)
            x = F.leaky_relu(x, self.negative_slope) if self.negative_slope else F.relu(x)
        return x


def _pointwise(widths: list[int]) -> SharedMLP:
    return SharedMLP(widths)


class EdgeConv(nn.Module):
    """EdgeConv: ``max_j h([x_i, x_j - x_i])`` over the k nearest neighbours of each point.

    References
    ----------
    Wang, Sun, Liu, Sarma, Bronstein & Solomon, "Dynamic Graph CNN for Learning on Point Clouds",
    ACM Transactions on Graphics 2019.

    Examples
    --------
    >>> import torch
    >>> xyz = torch.randn(2, 32, 3)
    >>> EdgeConv(in_dim=3, out_dim=16, k=8)(xyz, xyz).shape
    torch.Size([2, 32, 16])
    """

    def __init__(self, in_dim: int, out_dim: int, k: int = 16):
        super().__init__()
        self.k = check_int(k, "k", min_value=1)
        self.mlp = SharedMLP([2 * in_dim, out_dim], negative_slope=0.2)

    def forward(self, feats: torch.Tensor, graph_xyz: torch.Tensor) -> torch.Tensor:
        """``feats`` (B, N, C), neighbours found in ``graph_xyz`` (B, N, 3) → (B, N, out)."""
        idx = knn_indices(graph_xyz, self.k)                          # (B, N, k)
        b = torch.arange(feats.shape[0], device=feats.device)[:, None, None]
        nbrs = feats[b, idx]                                          # (B, N, k, C)
        centre = feats.unsqueeze(2).expand_as(nbrs)
        return self.mlp(torch.cat([centre, nbrs - centre], dim=-1)).max(dim=2).values


class _PointClassifier(nn.Module):
    """Shared plumbing: inputs, optional curvature channel, CHR at ``embed``/``pool``, the head."""

    def __init__(self, num_classes: int, first: nn.Module, first_dim: int, rest: nn.Module,
                 feat_dim: int, *, use_chr: bool, chr_stage: str, curvature_feature: bool,
                 hyp_dim: int | None, k: int, head_hidden: int, dropout: float, chr_kwargs: dict):
        super().__init__()
        self.num_classes = check_int(num_classes, "num_classes", min_value=2)
        self.use_chr = bool(use_chr)
        self.chr_stage = check_choice(chr_stage, "chr_stage", ("pool", "embed", "all"))
        self.curvature_feature = bool(curvature_feature)
        self.k = check_int(k, "k", min_value=3)
        check_scalar_in(dropout, "dropout", low=0.0, high=1.0, high_inclusive=False)
        self.first, self.rest = first, rest
        stages = {"pool": ("pool",), "embed": ("embed",), "all": ("embed", "pool")}[self.chr_stage]
        self.chr_embed = (CurvatureHyperbolicRectifier(first_dim, None, k=k, **chr_kwargs)
                          if self.use_chr and "embed" in stages else None)
        self.chr_pool = (CurvatureHyperbolicRectifier(feat_dim, hyp_dim, k=k, **chr_kwargs)
                         if self.use_chr and "pool" in stages else None)
        head_in = feat_dim + (self.chr_pool.out_dim if self.chr_pool is not None else 0)
        self.head = nn.Sequential(nn.Linear(head_in, head_hidden), nn.BatchNorm1d(head_hidden),
                                  nn.ReLU(), nn.Dropout(dropout), nn.Linear(head_hidden, num_classes))

    @property
    def needs_curvature(self) -> bool:
        return self.use_chr or self.curvature_feature

    def _first(self, inp: torch.Tensor, xyz: torch.Tensor) -> torch.Tensor:
        return self.first(inp)

    def forward(self, xyz: torch.Tensor, curvature: torch.Tensor | None = None,
                return_chr: bool = False):
        """Class logits ``(B, num_classes)`` of clouds ``xyz`` (B, N, 3).

        ``curvature`` (B, N) is computed from ``xyz`` when needed and not given. With
        ``return_chr=True`` also returns the pooling-stage CHR output dict (or ``None``).
        """
        check_points(xyz, "xyz", k=self.k if (self.needs_curvature and curvature is None) else None)
        check_module_dtype(self, xyz, "xyz")
        if self.needs_curvature:
            if curvature is None:
                curvature = surface_variation(xyz, self.k)
            curvature = check_curvature(curvature, xyz).to(xyz.dtype)
        inp = torch.cat([xyz, curvature.unsqueeze(-1)], -1) if self.curvature_feature else xyz
        h = self._first(inp, xyz)                                        # (B, N, C1)
        if self.chr_embed is not None:
            h = self.chr_embed(xyz, h, curvature)["tangent"]
        h = self.rest(h)                                                 # (B, N, C)
        pooled = h.max(dim=1).values
        out = None
        if self.chr_pool is not None:
            out = self.chr_pool(xyz, h, curvature, return_points=False)
            pooled = torch.cat([pooled, out["pooled"]], dim=-1)
        logits = self.head(pooled)
        return (logits, out) if return_chr else logits


class PointNetLite(_PointClassifier):
    """PointNet-lite: shared MLP ``in→32→64→128`` (BatchNorm, ReLU), max-pool, MLP head, optional CHR.

    Parameters
    ----------
    num_classes : int
        Number of classes.
    use_chr : bool
        Insert the CHR module (:class:`CurvatureHyperbolicRectifier`).
    chr_stage : {"pool", "embed", "all"}
        ``pool``: CHR on the last per-point features, head input ``concat(max-pool, z_hyp)``;
        ``embed``: CHR after the first layer, later layers see ``log_0`` of the rectified points;
        ``all``: both.
    curvature_feature : bool
        Append ``κ`` to the input coordinates (the curvature-as-feature control).
    hyp_dim : int, optional
        Projection width before the push at the pooling stage; ``None`` (default): no projection,
        CHR acts on the backbone's own features (the spec's default; a 128→64 projection alone
        costs about a third of a PointNet-lite forward pass).
    k : int
        Curvature neighbourhood size.
    widths : tuple of int
        Shared-MLP widths.
    head_hidden, dropout : int, float
        Head hidden width and dropout.
    **chr_kwargs
        Passed to :class:`CurvatureHyperbolicRectifier` (``c``, ``t_max``, ``gate``, ...).

    References
    ----------
    Qi, Su, Mo & Guibas, "PointNet: Deep Learning on Point Sets for 3D Classification and
    Segmentation", CVPR 2017 (a smaller variant).
    *PointCHR: curvature-aware hyperbolic rectification for point cloud analysis*, ICML 2026
    (authors not retrievable; see the package README). Its backbone.

    Examples
    --------
    >>> import torch
    >>> net = PointNetLite(num_classes=4, use_chr=True, k=8).eval()
    >>> net(torch.randn(2, 32, 3)).shape
    torch.Size([2, 4])
    """

    def __init__(self, num_classes: int, *, use_chr: bool = False, chr_stage: str = "pool",
                 curvature_feature: bool = False, hyp_dim: int | None = None, k: int = 16,
                 widths: tuple = (32, 64, 128), head_hidden: int = 64, dropout: float = 0.3,
                 **chr_kwargs):
        widths = [check_int(w, "widths", min_value=1) for w in widths]
        if len(widths) < 2:
            raise ValueError(f"widths must have at least two entries, got {widths}")
        in_dim = 4 if curvature_feature else 3
        super().__init__(num_classes, _pointwise([in_dim, widths[0]]), widths[0],
                         _pointwise(widths), widths[-1], use_chr=use_chr, chr_stage=chr_stage,
                         curvature_feature=curvature_feature, hyp_dim=hyp_dim, k=k,
                         head_hidden=head_hidden, dropout=dropout, chr_kwargs=chr_kwargs)


class DGCNNLite(_PointClassifier):
    """DGCNN-lite: one EdgeConv (k-NN graph on xyz, ``edge_dim`` channels), a 1×1 conv to ``feat_dim``,
    max-pool, MLP head; optional CHR as in :class:`PointNetLite`.

    References
    ----------
    Wang, Sun, Liu, Sarma, Bronstein & Solomon, "Dynamic Graph CNN for Learning on Point Clouds",
    ACM Transactions on Graphics 2019 (a one-EdgeConv variant).

    Examples
    --------
    >>> import torch
    >>> net = DGCNNLite(num_classes=3, k=8, use_chr=True).eval()
    >>> net(torch.randn(2, 32, 3)).shape
    torch.Size([2, 3])
    """

    def __init__(self, num_classes: int, *, use_chr: bool = False, chr_stage: str = "pool",
                 curvature_feature: bool = False, hyp_dim: int | None = None, k: int = 16,
                 edge_dim: int = 32, feat_dim: int = 128, head_hidden: int = 64,
                 dropout: float = 0.3, **chr_kwargs):
        edge_dim = check_int(edge_dim, "edge_dim", min_value=1)
        feat_dim = check_int(feat_dim, "feat_dim", min_value=1)
        in_dim = 4 if curvature_feature else 3
        super().__init__(num_classes, EdgeConv(in_dim, edge_dim, k), edge_dim,
                         _pointwise([edge_dim, feat_dim]), feat_dim, use_chr=use_chr,
                         chr_stage=chr_stage, curvature_feature=curvature_feature, hyp_dim=hyp_dim,
                         k=k, head_hidden=head_hidden, dropout=dropout, chr_kwargs=chr_kwargs)

    def _first(self, inp: torch.Tensor, xyz: torch.Tensor) -> torch.Tensor:
        return self.first(inp, xyz)


def farthest_point_sample(xyz: torch.Tensor, m: int) -> torch.Tensor:
    """Indices (B, m) of farthest point sampling, starting from point 0 (deterministic)."""
    b, n, _ = xyz.shape
    m = check_int(m, "m", min_value=1, max_value=n)
    idx = torch.zeros(b, m, dtype=torch.long, device=xyz.device)
    dist = torch.full((b, n), float("inf"), dtype=xyz.dtype, device=xyz.device)
    last = xyz[:, 0]
    for i in range(1, m):
        dist = torch.minimum(dist, (xyz - last[:, None]).pow(2).sum(-1))
        idx[:, i] = dist.argmax(dim=1)
        last = xyz[torch.arange(b), idx[:, i]]
    return idx


def ball_query(xyz: torch.Tensor, centroids: torch.Tensor, radius: float, nsample: int) -> torch.Tensor:
    """Indices (B, M, nsample) of up to ``nsample`` nearest points within ``radius`` of each centroid;
    slots beyond the ball repeat the nearest point (PointNet++'s convention)."""
    dist = torch.cdist(centroids, xyz)                                 # (B, M, N)
    nsample = min(nsample, xyz.shape[1])
    d, idx = dist.topk(nsample, dim=-1, largest=False)
    return torch.where(d <= radius, idx, idx[..., :1].expand_as(idx))


class _SetAbstraction(nn.Module):
    def __init__(self, n_centroids: int, radius: float, nsample: int, widths: list[int]):
        super().__init__()
        self.n_centroids, self.radius, self.nsample = n_centroids, radius, nsample
        self.mlp = SharedMLP(widths)

    def forward(self, xyz: torch.Tensor, feats: torch.Tensor | None):
        b = torch.arange(xyz.shape[0], device=xyz.device)
        centre_idx = farthest_point_sample(xyz, min(self.n_centroids, xyz.shape[1]))
        centres = xyz[b[:, None], centre_idx]                              # (B, M, 3)
        group = ball_query(xyz, centres, self.radius, self.nsample)        # (B, M, S)
        local = xyz[b[:, None, None], group] - centres.unsqueeze(2)         # (B, M, S, 3)
        if feats is not None:
            local = torch.cat([local, feats[b[:, None, None], group]], dim=-1)
        return centres, self.mlp(local).max(dim=2).values


class PointNet2Lite(nn.Module):
    """PointNet++-SSG-lite: two set-abstraction stages (FPS + ball query), max-pool, head; optional CHR.

    CHR (``use_chr=True``) rectifies the last stage's centroid features, with κ the surface
    variation of the centroids (``k`` clamped to the number of centroids); the head input is
    ``concat(max-pool, z_hyp)`` as in :class:`PointNetLite`.

    Ball-query groups that hold only their centroid (sparse clouds, small radii) have local
    coordinates of exactly 0, so in training mode some BatchNorm channels are near-constant
    and the gradients through them are rounding noise amplified by ``1/σ``: two devices (or a
    1e-6 change of the input) give gradients that differ by O(1) there, while eval mode agrees
    to 1e-6 (tested).

    References
    ----------
    Qi, Yi, Su & Guibas, "PointNet++: Deep Hierarchical Feature Learning on Point Sets in a Metric
    Space", NeurIPS 2017 (single-scale grouping, two stages).

    Examples
    --------
    >>> import torch
    >>> net = PointNet2Lite(num_classes=3, use_chr=True).eval()
    >>> net(torch.randn(2, 256, 3)).shape
    torch.Size([2, 3])
    """

    def __init__(self, num_classes: int, *, use_chr: bool = False, hyp_dim: int | None = None,
                 k: int = 16, centroids: tuple = (128, 32), radii: tuple = (0.2, 0.4),
                 nsample: int = 32, head_hidden: int = 64, dropout: float = 0.3, **chr_kwargs):
        super().__init__()
        self.num_classes = check_int(num_classes, "num_classes", min_value=2)
        self.k = check_int(k, "k", min_value=3)
        self.sa1 = _SetAbstraction(check_int(centroids[0], "centroids", min_value=self.k), radii[0],
                                   nsample, [3, 32, 32, 64])
        self.sa2 = _SetAbstraction(check_int(centroids[1], "centroids", min_value=self.k), radii[1],
                                   nsample, [3 + 64, 64, 128])
        self.chr_pool = (CurvatureHyperbolicRectifier(128, hyp_dim, k=self.k, **chr_kwargs)
                         if use_chr else None)
        head_in = 128 + (self.chr_pool.out_dim if self.chr_pool is not None else 0)
        self.head = nn.Sequential(nn.Linear(head_in, head_hidden), nn.BatchNorm1d(head_hidden),
                                  nn.ReLU(), nn.Dropout(dropout), nn.Linear(head_hidden, num_classes))

    def forward(self, xyz: torch.Tensor, curvature: torch.Tensor | None = None,
                return_chr: bool = False):
        """Class logits of clouds ``xyz`` (B, N, 3); ``curvature`` of the input points is ignored
        (κ is computed on the sampled centroids)."""
        check_points(xyz, "xyz", k=self.sa1.n_centroids)
        check_module_dtype(self, xyz, "xyz")
        c1, f1 = self.sa1(xyz, None)
        c2, f2 = self.sa2(c1, f1)
        pooled = f2.max(dim=1).values
        out = None
        if self.chr_pool is not None:
            out = self.chr_pool(c2, f2, surface_variation(c2, self.k), return_points=False)
            pooled = torch.cat([pooled, out["pooled"]], dim=-1)
        logits = self.head(pooled)
        return (logits, out) if return_chr else logits


class HyCoReLite(nn.Module):
    """HyCoRe-lite: PointNet-lite encoder, global embedding on the Poincaré ball, part–whole regulariser.

    Parameters
    ----------
    num_classes : int
    hyp_dim : int
        Dimension of the hyperbolic embedding.
    c : float
        Ball curvature.
    t_clip : float
        Feature clipping of the tangent embedding before ``exp_0``.
    part_fraction : float
        Share of the points in a part (the nearest to a random anchor point).
    margin, entail_weight, contrast_weight, temperature : float
        Entailment ``max(0, d(0, z_whole) - d(0, z_part) + margin)`` (parts lie further from the
        origin than their whole) and contrastive part→whole InfoNCE on ``-d(z_part, z_whole)/τ``.

    References
    ----------
    Montanaro, Valsesia & Magli, "Rethinking the Compositionality of Point Clouds through
    Regularization in the Hyperbolic Space", NeurIPS 2022 (HyCoRe; a lite variant).

    Examples
    --------
    >>> import torch
    >>> net = HyCoReLite(num_classes=3).eval()
    >>> net(torch.randn(2, 32, 3)).shape
    torch.Size([2, 3])
    """

    def __init__(self, num_classes: int, *, hyp_dim: int = 64, c: float = 1.0, t_clip: float = 1.0,
                 widths: tuple = (32, 64, 128), head_hidden: int = 64, dropout: float = 0.3,
                 part_fraction: float = 0.25, margin: float = 0.1, entail_weight: float = 0.1,
                 contrast_weight: float = 0.1, temperature: float = 0.1):
        super().__init__()
        self.num_classes = check_int(num_classes, "num_classes", min_value=2)
        self.c = check_scalar_in(c, "c", low=0.0, low_inclusive=False)
        self.t_clip = check_scalar_in(t_clip, "t_clip", low=0.0, low_inclusive=False)
        self.part_fraction = check_scalar_in(part_fraction, "part_fraction", low=0.0, high=1.0,
                                             low_inclusive=False)
        self.margin = check_scalar_in(margin, "margin", low=0.0)
        self.entail_weight = check_scalar_in(entail_weight, "entail_weight", low=0.0)
        self.contrast_weight = check_scalar_in(contrast_weight, "contrast_weight", low=0.0)
        self.temperature = check_scalar_in(temperature, "temperature", low=0.0, low_inclusive=False)
        widths = [3, *[check_int(w, "widths", min_value=1) for w in widths]]
        self.encoder = _pointwise(widths)
        self.to_tangent = nn.Linear(widths[-1], check_int(hyp_dim, "hyp_dim", min_value=1))
        self.head = nn.Sequential(nn.Linear(hyp_dim, head_hidden), nn.BatchNorm1d(head_hidden),
                                  nn.ReLU(), nn.Dropout(dropout), nn.Linear(head_hidden, num_classes))

    def embed(self, xyz: torch.Tensor) -> torch.Tensor:
        """Poincaré-ball embedding ``(B, hyp_dim)`` of clouds ``(B, N, 3)``."""
        u = self.to_tangent(self.encoder(xyz).max(dim=1).values)
        u = u * (self.t_clip / u.norm(dim=-1, keepdim=True).clamp_min(1e-15)).clamp_max(1.0)
        return PoincareOps.expmap0(u, self.c)

    def forward(self, xyz: torch.Tensor, curvature: torch.Tensor | None = None,
                return_chr: bool = False):
        """Class logits; ``curvature`` is ignored (HyCoRe is not curvature-aware)."""
        check_points(xyz, "xyz")
        check_module_dtype(self, xyz, "xyz")
        logits = self.head(PoincareOps.logmap0(self.embed(xyz), self.c))
        return (logits, None) if return_chr else logits

    def regulariser(self, xyz: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """HyCoRe's part–whole loss for a batch (entailment + contrastive), a scalar."""
        b, n, _ = xyz.shape
        m = max(1, int(round(self.part_fraction * n)))
        anchor = xyz[torch.arange(b), torch.randint(n, (b,), generator=generator)]
        idx = (xyz - anchor[:, None]).norm(dim=-1).topk(m, largest=False).indices
        part = torch.gather(xyz, 1, idx[..., None].expand(b, m, 3))
        whole_z, part_z = self.embed(xyz), self.embed(part)
        k = -torch.as_tensor(self.c, dtype=xyz.dtype, device=xyz.device)
        entail = F.relu(stereo_math.dist0(whole_z, k=k) - stereo_math.dist0(part_z, k=k)
                        + self.margin).mean()
        pair = stereo_math.dist(part_z[:, None], whole_z[None], k=k)       # (B, B)
        contrast = F.cross_entropy(-pair / self.temperature, torch.arange(b, device=xyz.device))
        return self.entail_weight * entail + self.contrast_weight * contrast
