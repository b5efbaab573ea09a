"""Deterministic in-process federated runs on Flower's Strategy / Client API.

Flower's simulation engine needs Ray (``flwr[simulation]``), which is not installed here and is
heavy to start on two cores. :func:`run_inprocess` therefore plays the Flower server's round
loop itself (``configure_fit`` -> ``Client.fit`` -> ``aggregate_fit``) with
:class:`~icml26.fedssa.flower.InProcessClientProxy` clients, sequentially and in client-id
order, so that a seed fixes every number. The strategies and clients are the ones a Flower
server would run unchanged (``flwr.server.Server`` works with them too; see the tests).

References
----------
Yu, Wan, Chen, Han, Gong. "Heterogeneity-Aware Knowledge Sharing for Graph Federated Learning"
(FedSSA), ICML 2026, arXiv:2601.21589.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from flwr.common import GetParametersIns
from flwr.server.client_manager import SimpleClientManager

from .baselines import GCFLStrategy, LocalStrategy, make_fedavg, make_fedprox
from .data import ClientGraph
from .fedssa import FedSSAClient, FedSSAConfig, GraphClient
from .flower import (FedSSANumPyClient, FedSSAStrategy, GraphNumPyClient, InProcessClientProxy,
                     _unscalar)

__all__ = ["History", "run_inprocess", "run_federation", "ALGORITHMS"]

ALGORITHMS = ("fedssa", "local", "fedavg", "fedprox", "fedper", "gcfl")


@dataclass
class History:
    """Per-round record of a federated run.

    Attributes
    ----------
    val, test : ndarray of shape (rounds, M)
        Each client's validation / test metric after its local training in each round (NaN
        where undefined, e.g. a single-class test set for ROC-AUC).
    clusters : list of dict
        FedSSA's semantic and structural labels per round (empty for the baselines).
    client_seconds, server_seconds : list of float
        Time spent in the clients' ``fit`` and in ``aggregate_fit`` per round.
    clients : list
        The trainers (their final models, γ, signatures).

    References
    ----------
    Yu, Wan, Chen, Han, Gong, "Heterogeneity-Aware Knowledge Sharing for Graph Federated
    Learning" (FedSSA), ICML 2026, arXiv:2601.21589 (its protocol: per client, the test metric
    at the round of best validation metric, averaged over clients).

    Examples
    --------
    >>> from icml26.fedssa import make_csbm_federation, FedSSAConfig
    >>> graphs = make_csbm_federation(n_regions=4, nodes_per_region=20, n_features=8,
    ...                               n_clients=4, seed=0)
    >>> config = FedSSAConfig(hidden=8, latent=4, K=2, local_epochs=1)
    >>> from icml26.fedssa import run_federation
    >>> history = run_federation("fedavg", graphs, config, rounds=3)
    >>> history.algorithm, history.val.shape, history.selected_test().shape
    ('fedavg', (3, 4), (4,))
    >>> 0.0 <= history.score() <= 1.0, history.n_skipped
    (True, 0)
    """

    algorithm: str
    val: np.ndarray
    test: np.ndarray
    clusters: list = field(default_factory=list)
    client_seconds: list = field(default_factory=list)
    server_seconds: list = field(default_factory=list)
    clients: list = field(default_factory=list)

    def selected_test(self) -> np.ndarray:
        """Per client, the test metric at its round of best validation metric (first on ties)."""
        out = np.full(self.val.shape[1], np.nan)
        for m in range(self.val.shape[1]):
            val = self.val[:, m]
            if np.all(np.isnan(val)):
                continue
            out[m] = self.test[int(np.nanargmax(val)), m]
        return out

    def score(self) -> float:
        """Client-averaged selected test metric (clients with an undefined metric skipped)."""
        return float(np.nanmean(self.selected_test()))

    @property
    def n_skipped(self) -> int:
        return int(np.isnan(self.selected_test()).sum())

    def mean_curve(self) -> np.ndarray:
        """Client-averaged test metric per round."""
        return np.nanmean(self.test, axis=1)


def run_inprocess(strategy, clients: list, rounds: int) -> tuple[list, list, list]:
    """Run ``rounds`` rounds of a Flower ``strategy`` over local ``NumPyClient``s.

    Returns
    -------
    per_round : list of list of dict
        Each round's fit metrics, per client in id order.
    client_seconds, server_seconds : list of float
    """
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    manager = SimpleClientManager()
    width = len(str(len(clients)))
    proxies = [InProcessClientProxy(str(i).zfill(width), c) for i, c in enumerate(clients)]
    for proxy in proxies:
        manager.register(proxy)
    parameters = strategy.initialize_parameters(manager)
    if parameters is None:  # as flwr.server.Server does: ask one client
        parameters = proxies[0].get_parameters(GetParametersIns(config={}), None, 0).parameters
    per_round, client_seconds, server_seconds = [], [], []
    for server_round in range(1, rounds + 1):
        instructions = sorted(strategy.configure_fit(server_round, parameters, manager),
                              key=lambda pair: pair[0].cid)
        start = time.perf_counter()
        results = [(proxy, proxy.fit(ins, None, server_round)) for proxy, ins in instructions]
        client_seconds.append(time.perf_counter() - start)
        start = time.perf_counter()
        new, _ = strategy.aggregate_fit(server_round, results, [])
        server_seconds.append(time.perf_counter() - start)
        if new is not None:
            parameters = new
        per_round.append([dict(res.metrics) for _, res in results])
    return per_round, client_seconds, server_seconds


def run_federation(algorithm: str, clients: list, config: FedSSAConfig | None = None,
                   rounds: int = 100, seed: int = 0, n_classes: int | None = None,
                   device="cpu") -> History:
    """Run one method on a federation of client graphs, in process, on Flower's API.

    Parameters
    ----------
    algorithm : {"fedssa", "local", "fedavg", "fedprox", "fedper", "gcfl"}
    clients : list of ClientGraph
    config : FedSSAConfig, optional
        Hyper-parameters (FedSSA's, and the backbone's for the baselines).
    rounds : int
    seed : int
        Initial weights (shared by all clients) and every client's per-round randomness.
    n_classes : int, optional
        Defaults to the largest label over all clients plus one.
    device : str or torch.device
        Where every client's graph and network live (``"cpu"``, ``"cuda"``, ``"auto"``); the
        server and the messages stay numpy.

    Returns
    -------
    History

    Examples
    --------
    >>> from icml26.fedssa import make_csbm_federation, run_federation, FedSSAConfig
    >>> graphs = make_csbm_federation(n_regions=4, nodes_per_region=40, n_clients=4, seed=0)
    >>> h = run_federation("fedavg", graphs, FedSSAConfig(hidden=8, latent=4, K=2), rounds=2)
    >>> h.test.shape
    (2, 4)
    """
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {ALGORITHMS}, got {algorithm!r}")
    if not clients or not all(isinstance(c, ClientGraph) for c in clients):
        raise TypeError("clients must be a non-empty list of ClientGraph")
    config = config or FedSSAConfig()
    if n_classes is None and not clients[0].binary:
        n_classes = max(int(c.y.max()) for c in clients) + 1
    m = len(clients)
    if algorithm == "fedssa":
        trainers = [FedSSAClient(g, config, n_classes, client_id=i, seed=seed, device=device)
                    for i, g in enumerate(clients)]
        flower_clients = [FedSSANumPyClient(t) for t in trainers]
        strategy = FedSSAStrategy(config, min_clients=m, seed=seed)
    else:
        trainers = [GraphClient(g, config, n_classes, client_id=i, seed=seed, device=device)
                    for i, g in enumerate(clients)]
        share = {"local": "none", "fedper": "body"}.get(algorithm, "all")
        flower_clients = [GraphNumPyClient(t, share) for t in trainers]
        strategy = {"local": lambda: LocalStrategy(m), "fedavg": lambda: make_fedavg(m),
                    "fedper": lambda: make_fedavg(m),
                    "fedprox": lambda: make_fedprox(m, config.prox_mu),
                    "gcfl": lambda: GCFLStrategy(config.gcfl_eps1, config.gcfl_eps2,
                                                 config.gcfl_split_round, m)}[algorithm]()
    per_round, client_seconds, server_seconds = run_inprocess(strategy, flower_clients, rounds)

    def table(key):
        return np.array([[_nan(_unscalar(r[key])) for r in rnd] for rnd in per_round], dtype=float)

    clusters = list(strategy.server.history_) if algorithm == "fedssa" else []
    return History(algorithm, table("val_metric"), table("test_metric"), clusters,
                   client_seconds, server_seconds, trainers)


def _nan(value):
    return np.nan if value is None else value
