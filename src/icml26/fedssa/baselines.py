"""Baselines as Flower strategies: FedAvg and FedProx are Flower's own; Local, FedPer and GCFL-lite
are written here. All run the same backbone as FedSSA (encoder + polynomial filter + classifier,
without the decoder or any alignment term).

* Local: no communication (:class:`LocalStrategy`).
* FedPer: Flower's ``FedAvg`` on every parameter except the classifier head, which stays on the
  client (the client side sets ``share="body"``).
* GCFL-lite (:class:`GCFLStrategy`): clustered FedAvg. A cluster with more than two clients is
  bi-partitioned (complete linkage on the cosine similarity of the clients' updates, as GCFL
  does) when its mean update norm is below ``eps1`` and its largest update norm is above
  ``eps2``; if that has not happened by round ``split_round``, the whole federation is
  bi-partitioned there once. The DTW-on-gradient-sequences of GCFL+ is left out ("lite").

References
----------
Xie, Ma, Xu, Yu, Zhao. "Federated Graph Classification over Non-IID Graphs" (GCFL), NeurIPS 2021.
Arivazhagan et al. "Federated Learning with Personalization Layers" (FedPer), arXiv:1912.00818.
Li et al. "Federated Optimization in Heterogeneous Networks" (FedProx), MLSys 2020.
"""

from __future__ import annotations

import numpy as np
from flwr.common import FitIns, Parameters, ndarrays_to_parameters, parameters_to_ndarrays
from flwr.server.strategy import FedAvg, FedProx, Strategy
from sklearn.cluster import AgglomerativeClustering

from .fedssa import average_weights

__all__ = ["LocalStrategy", "GCFLStrategy", "make_fedavg", "make_fedprox", "flat_update"]


def weighted_fit_metrics(results: list) -> dict:
    """Example-weighted mean of the clients' numeric fit metrics (NaN entries skipped)."""
    keys = ("val_metric", "test_metric")
    out = {}
    for key in keys:
        pairs = [(n, float(m[key])) for n, m in results if key in m and np.isfinite(float(m[key]))]
        if pairs:
            out[key] = sum(n * v for n, v in pairs) / sum(n for n, _ in pairs)
    return out


def make_fedavg(n_clients: int) -> FedAvg:
    """Flower's ``FedAvg`` with full participation and no server-side evaluation."""
    return FedAvg(fraction_fit=1.0, fraction_evaluate=0.0, min_fit_clients=n_clients,
                  min_available_clients=n_clients, fit_metrics_aggregation_fn=weighted_fit_metrics)


def make_fedprox(n_clients: int, proximal_mu: float = 0.01) -> FedProx:
    """Flower's ``FedProx`` (it sends ``proximal_mu`` to the clients) with full participation."""
    return FedProx(fraction_fit=1.0, fraction_evaluate=0.0, min_fit_clients=n_clients,
                   min_available_clients=n_clients, proximal_mu=proximal_mu,
                   fit_metrics_aggregation_fn=weighted_fit_metrics)


class _FitOnlyStrategy(Strategy):
    """A strategy without federated or centralised evaluation (clients report metrics in fit)."""

    def configure_evaluate(self, server_round, parameters, client_manager):
        return []

    def aggregate_evaluate(self, server_round, results, failures):
        return None, {}

    def evaluate(self, server_round, parameters):
        return None


class LocalStrategy(_FitOnlyStrategy):
    """Every client trains alone: empty parameters out, nothing aggregated.

    References
    ----------
    Yu, Wan, Chen, Han, Gong, "Heterogeneity-Aware Knowledge Sharing for Graph Federated
    Learning" (FedSSA), ICML 2026, arXiv:2601.21589 (the Local baseline of its comparisons: each
    client trains on its own subgraph only).

    Examples
    --------
    >>> from icml26.fedssa import make_csbm_federation, FedSSAConfig
    >>> graphs = make_csbm_federation(n_regions=4, nodes_per_region=20, n_features=8,
    ...                               n_clients=4, seed=0)
    >>> config = FedSSAConfig(hidden=8, latent=4, K=2, local_epochs=1)
    >>> from icml26.fedssa import GraphClient, GraphNumPyClient, LocalStrategy, run_inprocess
    >>> clients = [GraphNumPyClient(GraphClient(g, config, n_classes=5, client_id=i), share="none")
    ...            for i, g in enumerate(graphs)]
    >>> per_round, _, _ = run_inprocess(LocalStrategy(min_clients=4), clients, rounds=2)
    >>> len(per_round), len(per_round[0])
    (2, 4)
    """

    def __init__(self, min_clients: int = 1):
        super().__init__()
        self.min_clients = int(min_clients)

    def __repr__(self) -> str:
        return "LocalStrategy()"

    def initialize_parameters(self, client_manager):
        return Parameters(tensors=[], tensor_type="numpy.ndarray")

    def configure_fit(self, server_round, parameters, client_manager):
        client_manager.wait_for(self.min_clients)
        empty = Parameters(tensors=[], tensor_type="numpy.ndarray")
        return [(proxy, FitIns(empty, {})) for proxy in
                sorted(client_manager.all().values(), key=lambda p: p.cid)]

    def aggregate_fit(self, server_round, results, failures):
        return None, {}


def flat_update(new: list, old: list) -> np.ndarray:
    """The flattened parameter change ``new - old``."""
    return np.concatenate([(np.asarray(a, np.float64) - np.asarray(b, np.float64)).ravel()
                           for a, b in zip(new, old)])


class GCFLStrategy(_FitOnlyStrategy):
    """GCFL-lite: clustered FedAvg that bi-partitions clusters by the cosine of client updates.

    Parameters
    ----------
    eps1, eps2 : float
        Split when ``||mean update|| < eps1`` and ``max ||update|| > eps2``.
    split_round : int
        Round of the one forced bi-partition of the whole federation if nothing split before.
    min_clients : int

    Attributes
    ----------
    clusters_ : list of list of str
        Client ids (Flower cids) per cluster.

    References
    ----------
    Xie, Ma, Xu, Yu, Zhao, "Federated Graph Classification over Non-IID Graphs" (GCFL), NeurIPS
    2021. Sattler, Müller, Samek, "Clustered Federated Learning: Model-Agnostic Distributed
    Multitask Optimization Under Privacy Constraints", IEEE TNNLS 2021 (the ``eps1`` / ``eps2``
    split criterion).

    Examples
    --------
    >>> from icml26.fedssa import make_csbm_federation, FedSSAConfig
    >>> graphs = make_csbm_federation(n_regions=4, nodes_per_region=20, n_features=8,
    ...                               n_clients=4, seed=0)
    >>> config = FedSSAConfig(hidden=8, latent=4, K=2, local_epochs=1)
    >>> from icml26.fedssa import GCFLStrategy, GraphClient, GraphNumPyClient, run_inprocess
    >>> clients = [GraphNumPyClient(GraphClient(g, config, n_classes=5, client_id=i))
    ...            for i, g in enumerate(graphs)]
    >>> strategy = GCFLStrategy(split_round=1, min_clients=4)
    >>> _ = run_inprocess(strategy, clients, rounds=2)
    >>> sorted(len(cluster) for cluster in strategy.clusters_)  # split once at round 1
    [2, 2]
    """

    def __init__(self, eps1: float = 0.05, eps2: float = 0.1, split_round: int = 10, min_clients: int = 2):
        super().__init__()
        self.eps1, self.eps2, self.split_round = float(eps1), float(eps2), int(split_round)
        self.min_clients = int(min_clients)
        self.clusters_: list = []
        self._params: list = []  # per cluster
        self._sent: dict = {}
        self.split_rounds_: list = []

    def __repr__(self) -> str:
        return f"GCFLStrategy(eps1={self.eps1}, eps2={self.eps2})"

    def initialize_parameters(self, client_manager):
        return None

    def _cluster_of(self, cid: str) -> int:
        for k, members in enumerate(self.clusters_):
            if cid in members:
                return k
        raise KeyError(cid)

    def configure_fit(self, server_round, parameters, client_manager):
        client_manager.wait_for(self.min_clients)
        proxies = sorted(client_manager.all().values(), key=lambda p: p.cid)
        if not self.clusters_:
            self.clusters_ = [[p.cid for p in proxies]]
            self._params = [parameters_to_ndarrays(parameters)]
        instructions = []
        for proxy in proxies:
            arrays = self._params[self._cluster_of(proxy.cid)]
            self._sent[proxy.cid] = arrays
            instructions.append((proxy, FitIns(ndarrays_to_parameters(arrays), {})))
        return instructions

    def _bipartition(self, members: list, updates: dict) -> list:
        vectors = np.stack([updates[c] for c in members])
        norms = np.linalg.norm(vectors, axis=1, keepdims=True) + 1e-12
        similarity = (vectors / norms) @ (vectors / norms).T
        labels = AgglomerativeClustering(n_clusters=2, metric="precomputed",
                                         linkage="complete").fit_predict(1.0 - similarity)
        return [[c for c, l in zip(members, labels) if l == k] for k in (labels[0], 1 - labels[0])]

    def aggregate_fit(self, server_round, results, failures):
        if not results:
            return None, {}
        new = {proxy.cid: parameters_to_ndarrays(res.parameters) for proxy, res in results}
        sizes = {proxy.cid: res.num_examples for proxy, res in results}
        updates = {c: flat_update(new[c], self._sent[c]) for c in new}
        clusters = []
        for members in self.clusters_:
            present = [c for c in members if c in new]
            if len(present) > 2 and server_round >= self.split_round:
                mean_norm = float(np.linalg.norm(np.mean([updates[c] for c in present], axis=0)))
                max_norm = float(max(np.linalg.norm(updates[c]) for c in present))
                forced = server_round == self.split_round and not self.split_rounds_
                if (mean_norm < self.eps1 and max_norm > self.eps2) or forced:
                    clusters.extend(self._bipartition(present, updates))
                    self.split_rounds_.append(server_round)
                    continue
            clusters.append(members)
        old = {c: self._params[k] for k, members in enumerate(self.clusters_) for c in members}
        self.clusters_ = clusters
        self._params = []
        for members in clusters:
            present = [c for c in members if c in new]
            self._params.append(average_weights([new[c] for c in present], [sizes[c] for c in present])
                                if present else old[members[0]])
        overall = average_weights([new[c] for c in sorted(new)], [sizes[c] for c in sorted(new)])
        return ndarrays_to_parameters(overall), {"n_clusters": len(clusters)}
