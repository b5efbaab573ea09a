"""Client subgraphs, graph partitioning, and the contextual-SBM federation with ground truth.

:class:`ClientGraph` is one client's node-classification subgraph (validated on creation).
:func:`make_csbm_federation` builds the synthetic dual-heterogeneity benchmark: regions with a
structural type (homophilic / heterophilic) and a semantic type (feature group A / B), cut into
clients by Louvain, each client carrying its ground-truth types so that the server's clusters
can be scored by ARI. The generator is a Resolution (not from the paper): no real graph dataset
can be read offline here.

References
----------
Yu, Wan, Chen, Han, Gong. "Heterogeneity-Aware Knowledge Sharing for Graph Federated Learning"
(FedSSA), ICML 2026, arXiv:2601.21589.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Sequence

import networkx as nx
import numpy as np
import torch

__all__ = ["ClientGraph", "make_csbm_federation", "louvain_partition", "metis_partition",
           "from_pyg", "canonical_edges", "check_edge_index"]

STRUCTURAL_TYPES = ("homo", "hetero")
SEMANTIC_TYPES = ("A", "B")


def check_edge_index(edge_index: Any, n_nodes: int, name: str = "edge_index") -> torch.Tensor:
    """Validate an edge list: int64 tensor of shape [2, e] with entries in [0, n_nodes)."""
    if isinstance(edge_index, np.ndarray):
        edge_index = torch.from_numpy(edge_index)
    if not isinstance(edge_index, torch.Tensor):
        raise TypeError(f"{name} must be a torch.LongTensor of shape [2, e], "
                        f"got {type(edge_index).__name__}")
    if edge_index.dtype != torch.int64:
        raise ValueError(f"{name} must have dtype int64, got {edge_index.dtype}")
    if edge_index.ndim != 2 or edge_index.shape[0] != 2:
        raise ValueError(f"{name} must have shape [2, e], got {tuple(edge_index.shape)}")
    if edge_index.numel():
        low, high = int(edge_index.min()), int(edge_index.max())
        if low < 0:
            raise ValueError(f"{name} has a negative node index {low}; expected indices in [0, {n_nodes})")
        if high >= n_nodes:
            raise ValueError(f"{name} has max index {high} but the graph has {n_nodes} nodes; "
                             f"expected indices in [0, {n_nodes})")
    return edge_index


def canonical_edges(edge_index: torch.Tensor, n_nodes: int) -> torch.Tensor:
    """Symmetrise, drop self-loops and duplicates; return a sorted [2, e] int64 tensor."""
    edge_index = check_edge_index(edge_index, n_nodes)
    src, dst = edge_index
    keep = src != dst
    src, dst = src[keep], dst[keep]
    both = torch.cat([torch.stack([src, dst]), torch.stack([dst, src])], dim=1)
    keys = torch.unique(both[0] * n_nodes + both[1])
    return torch.stack([keys // n_nodes, keys % n_nodes])


def _check_mask(mask: Any, n: int, name: str) -> torch.Tensor:
    if isinstance(mask, np.ndarray):
        mask = torch.from_numpy(mask)
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
        raise TypeError(f"{name} must be a boolean torch tensor, got "
                        f"{getattr(mask, 'dtype', type(mask).__name__)}")
    if mask.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), got {tuple(mask.shape)}")
    return mask


@dataclass
class ClientGraph:
    """One client's subgraph for node classification.

    Parameters
    ----------
    x : Tensor of shape (n, d)
        Node features (finite floats).
    edge_index : LongTensor of shape (2, e)
        Edges; symmetrised, with self-loops and duplicates removed, on creation.
    y : LongTensor of shape (n,) or FloatTensor of shape (n,)
        Class labels in ``[0, C)`` (multi-class) or floats in {0, 1} (binary task).
    train_mask, val_mask, test_mask : BoolTensor of shape (n,)
    meta : dict
        Free-form facts about the client (ground-truth types, region, purity, ...).

    References
    ----------
    Yu, Wan, Chen, Han, Gong, "Heterogeneity-Aware Knowledge Sharing for Graph Federated
    Learning" (FedSSA), ICML 2026, arXiv:2601.21589 (the node-classification subgraph one client
    holds in its protocol). Fey & Lenssen, "Fast Graph Representation Learning with PyTorch
    Geometric", ICLR 2019 Workshop on Representation Learning on Graphs and Manifolds (the ``x``
    / ``edge_index`` / ``y`` / split-mask convention; see :func:`from_pyg`).

    Examples
    --------
    >>> import torch
    >>> g = ClientGraph(torch.zeros(3, 2), torch.tensor([[0, 1], [1, 2]]), torch.tensor([0, 1, 0]),
    ...                 torch.tensor([True, True, False]), torch.tensor([False, False, True]),
    ...                 torch.tensor([False, False, True]))
    >>> g.n_nodes, g.n_edges
    (3, 2)
    """

    x: torch.Tensor
    edge_index: torch.Tensor
    y: torch.Tensor
    train_mask: torch.Tensor
    val_mask: torch.Tensor
    test_mask: torch.Tensor
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if isinstance(self.x, np.ndarray):
            self.x = torch.from_numpy(self.x)
        if not isinstance(self.x, torch.Tensor) or not self.x.is_floating_point():
            raise TypeError(f"x must be a float torch tensor, got {getattr(self.x, 'dtype', type(self.x))}")
        if self.x.ndim != 2:
            raise ValueError(f"x must be 2-D (nodes, features), got shape {tuple(self.x.shape)}")
        n = self.x.shape[0]
        if n == 0:
            raise ValueError("x has 0 nodes; a client needs at least one node")
        if torch.isnan(self.x).any():
            raise ValueError("x contains NaN")
        if torch.isinf(self.x).any():
            raise ValueError("x contains inf")
        if isinstance(self.y, np.ndarray):
            self.y = torch.from_numpy(self.y)
        if not isinstance(self.y, torch.Tensor) or self.y.ndim != 1 or self.y.shape[0] != n:
            raise ValueError(f"y must be a 1-D tensor of length {n}, got shape "
                             f"{tuple(getattr(self.y, 'shape', ()))}")
        if self.y.is_floating_point():
            if not bool(((self.y == 0) | (self.y == 1)).all()):
                raise ValueError("y is float (binary task) but has values outside {0, 1}")
        elif self.y.dtype != torch.int64:
            raise ValueError(f"y must be int64 (classes) or float (binary), got {self.y.dtype}")
        elif int(self.y.min()) < 0:
            raise ValueError(f"y has a negative class label {int(self.y.min())}; expected labels in [0, C)")
        self.train_mask = _check_mask(self.train_mask, n, "train_mask")
        self.val_mask = _check_mask(self.val_mask, n, "val_mask")
        self.test_mask = _check_mask(self.test_mask, n, "test_mask")
        self.edge_index = canonical_edges(self.edge_index, n)
        if self.edge_index.shape[1] == 0:
            warnings.warn(f"client graph {self.meta.get('client_id', '')} has 0 edges: "
                          "the normalised adjacency is I and the filter reduces to sum(gamma)",
                          UserWarning, stacklevel=2)

    @property
    def n_nodes(self) -> int:
        return int(self.x.shape[0])

    def to(self, device) -> "ClientGraph":
        """The graph with its tensors on ``device`` (``self`` when they are there already)."""
        device = torch.device(device)
        if self.x.device == device and self.edge_index.device == device:
            return self
        return ClientGraph(self.x.to(device), self.edge_index.to(device), self.y.to(device),
                           self.train_mask.to(device), self.val_mask.to(device),
                           self.test_mask.to(device), dict(self.meta))

    @property
    def n_edges(self) -> int:
        """Number of undirected edges."""
        return int(self.edge_index.shape[1] // 2)

    @property
    def n_features(self) -> int:
        return int(self.x.shape[1])

    @property
    def binary(self) -> bool:
        return bool(self.y.is_floating_point())

    def edge_homophily(self) -> float:
        """Share of edges whose endpoints have the same label (nan without edges)."""
        if self.edge_index.shape[1] == 0:
            return float("nan")
        src, dst = self.edge_index
        return float((self.y[src] == self.y[dst]).float().mean())


# -- partitioning ---------------------------------------------------------------------------

def _nx_graph(edge_index: torch.Tensor, n_nodes: int) -> nx.Graph:
    graph = nx.Graph()
    graph.add_nodes_from(range(n_nodes))
    ei = edge_index.numpy()
    graph.add_edges_from(zip(ei[0].tolist(), ei[1].tolist()))
    return graph


def _cut_edges(graph: nx.Graph, labels: np.ndarray, a: int) -> dict:
    counts: dict = {}
    for u in np.flatnonzero(labels == a):
        for v in graph.neighbors(int(u)):
            b = int(labels[v])
            if b != a:
                counts[b] = counts.get(b, 0) + 1
    return counts


def louvain_partition(edge_index: torch.Tensor, n_nodes: int, n_clients: int,
                      seed: int = 0, resolution: float = 1.0) -> np.ndarray:
    """Cut a graph into exactly ``n_clients`` parts with Louvain communities.

    More communities than clients: the smallest is merged repeatedly into the neighbouring
    community with which it shares the most edges (into the next smallest when it has no
    neighbour). Fewer: the largest is split by Louvain on its induced subgraph (into two halves
    by node id if Louvain does not split it).

    Parameters
    ----------
    edge_index : LongTensor of shape (2, e)
    n_nodes : int
    n_clients : int
    seed : int
    resolution : float
        Louvain resolution.

    Returns
    -------
    ndarray of int, shape (n_nodes,)
        Client id of every node, ids 0..n_clients-1 ordered by each part's smallest node.
    """
    if n_clients < 1 or n_clients > n_nodes:
        raise ValueError(f"n_clients must be in [1, n_nodes={n_nodes}], got {n_clients}")
    edge_index = canonical_edges(edge_index, n_nodes)
    graph = _nx_graph(edge_index, n_nodes)
    communities = nx.community.louvain_communities(graph, resolution=resolution, seed=seed)
    labels = np.empty(n_nodes, dtype=np.int64)
    for k, members in enumerate(sorted(communities, key=min)):
        labels[list(members)] = k
    while len(np.unique(labels)) > n_clients:
        ids, sizes = np.unique(labels, return_counts=True)
        smallest = int(ids[np.lexsort((ids, sizes))[0]])
        counts = _cut_edges(graph, labels, smallest)
        if counts:
            target = max(sorted(counts), key=lambda b: counts[b])
        else:
            others = [(s, i) for i, s in zip(ids, sizes) if i != smallest]
            target = int(min(others)[1])
        labels[labels == smallest] = target
    while len(np.unique(labels)) < n_clients:
        ids, sizes = np.unique(labels, return_counts=True)
        largest = int(ids[np.lexsort((ids, -sizes))[0]])
        nodes = np.flatnonzero(labels == largest)
        parts = nx.community.louvain_communities(graph.subgraph(nodes.tolist()),
                                                 resolution=resolution, seed=seed)
        parts = sorted(parts, key=len, reverse=True)
        new = labels.max() + 1
        if len(parts) >= 2:
            labels[list(parts[1])] = new  # keep the biggest, split off the second biggest
            for extra in parts[2:]:
                labels[list(extra)] = new
        else:
            labels[nodes[len(nodes) // 2:]] = new
    # canonical ids: by smallest node
    _, first = np.unique(labels, return_index=True)
    order = np.argsort(first)
    remap = {int(labels[first[k]]): rank for rank, k in enumerate(order)}
    return np.array([remap[int(v)] for v in labels], dtype=np.int64)


def metis_partition(edge_index: torch.Tensor, n_nodes: int, n_clients: int) -> np.ndarray:
    """METIS partition into ``n_clients`` parts (needs the optional ``pymetis`` package)."""
    try:
        import pymetis  # type: ignore
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("metis_partition needs pymetis (pip install pymetis); "
                          "louvain_partition needs nothing extra") from exc
    edge_index = canonical_edges(edge_index, n_nodes)
    adjacency = [[] for _ in range(n_nodes)]
    for u, v in edge_index.t().tolist():
        adjacency[u].append(v)
    _, parts = pymetis.part_graph(n_clients, adjacency=adjacency)
    return np.asarray(parts, dtype=np.int64)


def _subgraphs(x, y, edge_index, masks, parts, meta_fn) -> list[ClientGraph]:
    clients = []
    src, dst = edge_index
    for client in range(int(parts.max()) + 1):
        nodes = np.flatnonzero(parts == client)
        local = -np.ones(len(parts), dtype=np.int64)
        local[nodes] = np.arange(len(nodes))
        keep = (parts[src] == client) & (parts[dst] == client)
        ei = torch.from_numpy(np.stack([local[src[keep]], local[dst[keep]]]))
        idx = torch.from_numpy(nodes)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            clients.append(ClientGraph(x[idx], ei, y[idx], *(m[idx] for m in masks),
                                       meta=meta_fn(client, nodes)))
    return clients


def from_pyg(data: Any, partition: Sequence[int]) -> list[ClientGraph]:
    """Split a PyG-style ``Data`` object (``x``, ``edge_index``, ``y``, masks) into clients.

    Works on any object with those attributes; ``torch_geometric`` is not required.
    ``partition[i]`` is the client of node ``i``; edges between clients are dropped.
    """
    parts = np.asarray(partition, dtype=np.int64)
    n = int(data.x.shape[0])
    if parts.shape != (n,):
        raise ValueError(f"partition must have one client id per node ({n}), got shape {parts.shape}")
    edge_index = canonical_edges(data.edge_index, n).numpy()
    masks = [getattr(data, m) for m in ("train_mask", "val_mask", "test_mask")]
    return _subgraphs(data.x.float(), data.y, edge_index, masks, parts,
                      lambda c, nodes: {"client_id": c, "n_nodes": len(nodes)})


# -- contextual SBM federation --------------------------------------------------------------

def _region_edges(rng, labels, start, h, n_total, mean_degree, cross_region_p):
    """Stub-matching edges of one region (global node ids)."""
    n = len(labels)
    stubs = rng.poisson(mean_degree / 2.0, size=n)
    src = np.repeat(np.arange(n), stubs)
    m = len(src)
    kind = rng.random(m)
    dst = np.empty(m, dtype=np.int64)
    cross = kind < cross_region_p
    # cross-region: uniform node of another region
    outside = rng.integers(0, n_total - n, size=int(cross.sum()))
    dst[cross] = np.where(outside >= start, outside + n, outside)
    same = (~cross) & (rng.random(m) < h)
    by_class = {c: np.flatnonzero(labels == c) for c in np.unique(labels)}
    for pick_same in (True, False):
        sel = np.flatnonzero(((~cross) & same) if pick_same else ((~cross) & ~same))
        for c, members in by_class.items():
            rows = sel[labels[src[sel]] == c]
            if not len(rows):
                continue
            pool = members if pick_same else np.flatnonzero(labels != c)
            if len(pool) == 0:  # a region with one class: fall back to any node
                pool = np.arange(n)
            dst[rows] = start + pool[rng.integers(0, len(pool), size=len(rows))]
    return np.stack([start + src, dst])


def make_csbm_federation(n_regions: int = 8, nodes_per_region: int = 400, n_classes: int = 5,
                         n_features: int = 64, homophily: tuple = (0.8, 0.2),
                         feature_shift: float = 2.0, class_sep: float = 2.0,
                         mean_degree: float = 8.0, cross_region_p: float = 0.02,
                         train_ratio: float = 0.1, val_ratio: float = 0.2, n_clients: int = 8,
                         partition: str = "louvain", seed: int = 0) -> list[ClientGraph]:
    """Contextual-SBM federation with crossed structural and semantic heterogeneity.

    Generative process (Resolution, not from the paper):

    1. ``n_regions`` regions of ``nodes_per_region`` nodes; region ``r`` has structural type
       ``s_r`` = homo if ``r % 4 in (0, 1)`` else hetero, and semantic type ``a_r`` = A if ``r``
       is even else B (a crossed 2x2 design; with 8 regions, 2 regions per cell).
    2. Class shares ``pi_r ~ Dir(2 * 1_C)``, labels ``y_i ~ Cat(pi_r)``.
    3. Class means ``M`` with rows ``~ N(0, class_sep^2 / d I)``; group B uses ``M + Delta`` with
       rows of Delta ``~ N(0, feature_shift^2 class_sep^2 / d I)``; ``x_i = M^{a_r}_{y_i} + N(0, I)``.
    4. Each node draws ``Poisson(mean_degree / 2)`` stubs: to a uniform node of another region with
       probability ``cross_region_p``, else to a same-class node of its region with probability
       ``h_r`` (``homophily[0]`` for homo regions, ``homophily[1]`` for hetero ones), else to a
       different-class node of its region. Symmetrised, without self-loops and duplicates.
    5. Per-region random split: ``train_ratio`` / ``val_ratio`` / rest test.
    6. Louvain partition into exactly ``n_clients`` clients (see :func:`louvain_partition`).

    Parameters
    ----------
    n_regions, nodes_per_region, n_classes, n_features : int
    homophily : (float, float)
        Same-class edge probability of homo and hetero regions.
    feature_shift : float
        eta, the size of group B's class-mean shift relative to ``class_sep``.
    class_sep : float
        nu, the scale of the class means.
    mean_degree, cross_region_p, train_ratio, val_ratio : float
    n_clients : int
    partition : {"louvain", "metis", "region"}
        "region" makes every region one client (needs ``n_clients == n_regions``).
    seed : int

    Returns
    -------
    list of ClientGraph
        Each with ``meta`` holding ``client_id``, ``region`` (majority region), ``purity``,
        ``structural_type``, ``semantic_type``, ``h_r`` and the realised ``edge_homophily``.

    Examples
    --------
    >>> clients = make_csbm_federation(n_regions=4, nodes_per_region=60, n_clients=4, seed=0)
    >>> sorted({c.meta["structural_type"] for c in clients})
    ['hetero', 'homo']
    """
    for name, value in (("n_regions", n_regions), ("nodes_per_region", nodes_per_region),
                        ("n_features", n_features), ("n_clients", n_clients)):
        if int(value) != value or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value}")
    if n_classes < 2:
        raise ValueError(f"n_classes must be >= 2, got {n_classes}")
    if len(homophily) != 2 or not all(0.0 <= h <= 1.0 for h in homophily):
        raise ValueError(f"homophily must be two probabilities (homo, hetero), got {homophily}")
    if not (0.0 < train_ratio and 0.0 <= val_ratio and train_ratio + val_ratio < 1.0):
        raise ValueError(f"train_ratio and val_ratio must be positive with sum < 1, "
                         f"got {train_ratio}, {val_ratio}")
    if not 0.0 <= cross_region_p <= 1.0:
        raise ValueError(f"cross_region_p must be a probability, got {cross_region_p}")
    if partition not in ("louvain", "metis", "region"):
        raise ValueError(f"partition must be 'louvain', 'metis' or 'region', got {partition!r}")
    rng = np.random.default_rng(seed)
    n_total = n_regions * nodes_per_region
    structural = [STRUCTURAL_TYPES[0] if r % 4 in (0, 1) else STRUCTURAL_TYPES[1] for r in range(n_regions)]
    semantic = [SEMANTIC_TYPES[r % 2] for r in range(n_regions)]
    h_of = {STRUCTURAL_TYPES[0]: homophily[0], STRUCTURAL_TYPES[1]: homophily[1]}
    means_a = rng.normal(0.0, class_sep / np.sqrt(n_features), size=(n_classes, n_features))
    shift = rng.normal(0.0, feature_shift * class_sep / np.sqrt(n_features), size=(n_classes, n_features))
    means = {"A": means_a, "B": means_a + shift}
    region = np.repeat(np.arange(n_regions), nodes_per_region)
    y = np.empty(n_total, dtype=np.int64)
    x = np.empty((n_total, n_features))
    splits = np.empty(n_total, dtype=np.int64)  # 0 train, 1 val, 2 test
    edges = []
    for r in range(n_regions):
        start = r * nodes_per_region
        block = slice(start, start + nodes_per_region)
        shares = rng.dirichlet(2.0 * np.ones(n_classes))
        y[block] = rng.choice(n_classes, size=nodes_per_region, p=shares)
        x[block] = means[semantic[r]][y[block]] + rng.normal(size=(nodes_per_region, n_features))
        order = rng.permutation(nodes_per_region)
        n_train = max(1, int(round(train_ratio * nodes_per_region)))
        n_val = int(round(val_ratio * nodes_per_region))
        split = np.full(nodes_per_region, 2)
        split[order[:n_train]] = 0
        split[order[n_train:n_train + n_val]] = 1
        splits[block] = split
        edges.append(_region_edges(rng, y[block], start, h_of[structural[r]], n_total,
                                   mean_degree, cross_region_p if n_regions > 1 else 0.0))
    edge_index = canonical_edges(torch.from_numpy(np.concatenate(edges, axis=1)), n_total)
    if partition == "louvain":
        parts = louvain_partition(edge_index, n_total, n_clients, seed=seed)
    elif partition == "metis":
        parts = metis_partition(edge_index, n_total, n_clients)
    else:
        if n_clients != n_regions:
            raise ValueError(f"partition='region' needs n_clients == n_regions, got {n_clients} and {n_regions}")
        parts = region.copy()
    xt, yt = torch.from_numpy(x).float(), torch.from_numpy(y)
    masks = [torch.from_numpy(splits == k) for k in range(3)]

    def meta(client: int, nodes: np.ndarray) -> dict:
        counts = np.bincount(region[nodes], minlength=n_regions)
        major = int(np.argmax(counts))
        return {"client_id": client, "region": major, "purity": float(counts[major] / len(nodes)),
                "structural_type": structural[major], "semantic_type": semantic[major],
                "h_r": float(h_of[structural[major]]), "n_nodes": int(len(nodes))}

    clients = _subgraphs(xt, yt, edge_index.numpy(), masks, parts, meta)
    for client in clients:
        client.meta["edge_homophily"] = client.edge_homophily()
    return clients
