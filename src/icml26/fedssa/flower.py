"""Flower adapters: NumPyClients for the graph trainers and :class:`FedSSAStrategy`, a Flower
``Strategy`` that any Flower server can run.

FedSSA sends every client its own message (its semantic cluster's weights and class
representatives, its structural cluster's filter γ̄). In Flower terms, ``configure_fit``
returns one ``FitIns`` per client: the semantic weights come first in ``parameters``, followed by
the extra arrays named (as JSON) under the config key ``"fedssa_extras"``; clients answer the
same way in ``FitRes``.

Example: with your own Flower server (``flwr.server.Server``) and client manager,
``Server(client_manager=manager, strategy=FedSSAStrategy(FedSSAConfig()))``; the clients are
``FedSSANumPyClient(FedSSAClient(graph, config, n_classes, client_id=i)).to_client()``.

References
----------
Yu, Wan, Chen, Han, Gong. "Heterogeneity-Aware Knowledge Sharing for Graph Federated Learning"
(FedSSA), ICML 2026, arXiv:2601.21589.
Beutel et al. "Flower: A Friendly Federated Learning Research Framework", arXiv:2007.14390.
"""

from __future__ import annotations

import json
import math

import numpy as np

try:
    from flwr.client import NumPyClient
    from flwr.common import (Code, DisconnectRes, FitIns, GetParametersIns, GetPropertiesRes,
                             Parameters, Status, ndarrays_to_parameters, parameters_to_ndarrays)
    from flwr.common import EvaluateIns
    from flwr.server.client_manager import ClientManager
    from flwr.server.client_proxy import ClientProxy
    from flwr.server.strategy import Strategy
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("icml26.fedssa needs Flower: pip install 'flwr>=1.42' "
                      "(or pip install 'icml26[fedssa]')") from exc

from .fedssa import FedSSAClient, FedSSAConfig, FedSSAServer, GraphClient, average_weights

__all__ = ["FedSSANumPyClient", "GraphNumPyClient", "FedSSAStrategy", "InProcessClientProxy",
           "pack_arrays", "unpack_arrays", "EXTRAS_KEY"]

EXTRAS_KEY = "fedssa_extras"
PAYLOAD_SCALARS = ("n_train", "n_nodes", "loss", "task_loss")


def pack_arrays(weights: list | None, extras: dict) -> tuple[list[np.ndarray], str]:
    """``[*weights, *extras.values()]`` and the JSON list of the extra keys (in order)."""
    keys = [k for k, v in extras.items() if v is not None]
    arrays = [np.asarray(w) for w in (weights or [])] + [np.asarray(extras[k]) for k in keys]
    return arrays, json.dumps(keys)


def unpack_arrays(arrays: list[np.ndarray], keys_json: str | None) -> tuple[list, dict]:
    """Inverse of :func:`pack_arrays`."""
    keys = json.loads(keys_json) if keys_json else []
    n_weights = len(arrays) - len(keys)
    if n_weights < 0:
        raise ValueError(f"{len(arrays)} arrays cannot hold the {len(keys)} extras {keys}")
    return list(arrays[:n_weights]), dict(zip(keys, arrays[n_weights:]))


def _scalar(value):
    """Flower metrics hold no None: encode missing values as NaN."""
    return float("nan") if value is None else value


def _unscalar(value):
    return None if isinstance(value, float) and math.isnan(value) else value


def _eval_metrics(trainer: GraphClient) -> dict:
    result = trainer.evaluate()
    return {"client_id": trainer.client_id, "val_metric": _scalar(result["val_metric"]),
            "test_metric": _scalar(result["test_metric"]), "metric": result["metric"]}


class GraphNumPyClient(NumPyClient):
    """Flower client around a :class:`GraphClient` for the baselines.

    Parameters
    ----------
    trainer : GraphClient
    share : {"all", "body", "none"}
        What the client exchanges: every parameter (FedAvg, FedProx, GCFL), all but the
        classifier head (FedPer), or nothing (Local).

    References
    ----------
    Yu, Wan, Chen, Han, Gong, "Heterogeneity-Aware Knowledge Sharing for Graph Federated
    Learning" (FedSSA), ICML 2026, arXiv:2601.21589 (the backbone its baselines share). Beutel
    et al., "Flower: A Friendly Federated Learning Research Framework", arXiv:2007.14390.
    Arivazhagan et al., "Federated Learning with Personalization Layers" (FedPer),
    arXiv:1912.00818 (``share="body"``).

    Examples
    --------
    >>> from icml26.fedssa import make_csbm_federation, FedSSAConfig
    >>> graphs = make_csbm_federation(n_regions=4, nodes_per_region=20, n_features=8,
    ...                               n_clients=4, seed=0)
    >>> config = FedSSAConfig(hidden=8, latent=4, K=2, local_epochs=1)
    >>> from icml26.fedssa import GraphClient, GraphNumPyClient
    >>> trainer = GraphClient(graphs[0], config, n_classes=5)
    >>> body = GraphNumPyClient(trainer, share="body")  # FedPer: the head stays local
    >>> len(body.get_parameters({})) < len(GraphNumPyClient(trainer).get_parameters({}))
    True
    >>> weights, n_train, metrics = body.fit(body.get_parameters({}), {})
    >>> n_train, sorted(metrics)[:3]
    (2, ['client_id', 'loss', 'metric'])
    """

    def __init__(self, trainer: GraphClient, share: str = "all"):
        if share not in ("all", "body", "none"):
            raise ValueError(f"share must be 'all', 'body' or 'none', got {share!r}")
        self.trainer = trainer
        head = set(trainer.groups["head"])
        self.names = {"all": list(trainer.names), "none": [],
                      "body": [n for n in trainer.names if n not in head]}[share]

    def get_parameters(self, config):
        return self.trainer.get_weights(self.names)

    def fit(self, parameters, config):
        if len(parameters) and self.names:
            self.trainer.set_weights(list(parameters), self.names)
        context = {}
        mu = float(config.get("proximal_mu", 0.0))
        if mu > 0 and self.names:  # Flower's FedProx sends proximal_mu in the fit config
            context = {"proximal_mu": mu, "prox_anchor": self.trainer.prox_anchor(self.names)}
        terms = self.trainer.train_round(context)
        return (self.trainer.get_weights(self.names), self.trainer.n_train,
                {**_eval_metrics(self.trainer), **terms})

    def evaluate(self, parameters, config):
        if len(parameters) and self.names:
            self.trainer.set_weights(list(parameters), self.names)
        metrics = _eval_metrics(self.trainer)
        return 0.0, int(self.trainer.graph.test_mask.sum()), metrics


class FedSSANumPyClient(NumPyClient):
    """Flower client around a :class:`FedSSAClient`.

    ``fit`` reads the semantic weights and the extras (``rep_means``, ``rep_stds``,
    ``rep_present``, ``gamma_bar``) from ``parameters``, trains one round and answers with its
    semantic weights plus the class-wise Gaussians, γ and the signature.

    References
    ----------
    Yu, Wan, Chen, Han, Gong, "Heterogeneity-Aware Knowledge Sharing for Graph Federated
    Learning" (FedSSA), ICML 2026, arXiv:2601.21589. Beutel et al., "Flower: A Friendly
    Federated Learning Research Framework", arXiv:2007.14390 (the ``NumPyClient`` interface).

    Examples
    --------
    >>> from icml26.fedssa import make_csbm_federation, FedSSAConfig
    >>> graphs = make_csbm_federation(n_regions=4, nodes_per_region=20, n_features=8,
    ...                               n_clients=4, seed=0)
    >>> config = FedSSAConfig(hidden=8, latent=4, K=2, local_epochs=1)
    >>> from icml26.fedssa import FedSSAClient, FedSSANumPyClient
    >>> client = FedSSANumPyClient(FedSSAClient(graphs[0], config, n_classes=5))
    >>> weights, n_train, metrics = client.fit(client.get_parameters({}), {})
    >>> n_train, "fedssa_extras" in metrics
    (2, True)
    """

    def __init__(self, client: FedSSAClient):
        if not isinstance(client, FedSSAClient):
            raise TypeError(f"client must be a FedSSAClient, got {type(client).__name__}")
        self.client = client

    def get_parameters(self, config):
        return self.client.get_weights(self.client.semantic_names)

    def _message(self, parameters, config) -> dict:
        weights, extras = unpack_arrays(list(parameters), config.get(EXTRAS_KEY))
        return {"weights": weights or None, **extras}

    def fit(self, parameters, config):
        payload = self.client.fit(self._message(parameters, config))
        extras = {k: v for k, v in payload.items() if k != "weights" and k not in PAYLOAD_SCALARS}
        arrays, keys = pack_arrays(payload["weights"], extras)
        metrics = {EXTRAS_KEY: keys, **{k: payload[k] for k in PAYLOAD_SCALARS if k in payload},
                   **_eval_metrics(self.client)}
        return arrays, self.client.n_train, metrics

    def evaluate(self, parameters, config):
        message = self._message(parameters, config)
        if message["weights"] is not None:
            self.client.set_weights(message["weights"], self.client.semantic_names)
        return 0.0, int(self.client.graph.test_mask.sum()), _eval_metrics(self.client)


def _payload_from_fit_res(fit_res) -> tuple[int, dict]:
    metrics = fit_res.metrics
    weights, extras = unpack_arrays(parameters_to_ndarrays(fit_res.parameters), metrics.get(EXTRAS_KEY))
    payload = {"weights": weights, **extras,
               **{k: metrics[k] for k in PAYLOAD_SCALARS if k in metrics}}
    payload.setdefault("n_train", fit_res.num_examples)
    return int(metrics["client_id"]), payload


def _weighted_metric(results, key) -> float | None:
    values = [(r.num_examples, _unscalar(r.metrics.get(key))) for _, r in results]
    values = [(n, v) for n, v in values if v is not None]
    total = sum(n for n, _ in values)
    return float(sum(n * v for n, v in values) / total) if total else None


class FedSSAStrategy(Strategy):
    """FedSSA as a Flower ``Strategy``: per-client cluster messages, server-side clustering.

    Parameters
    ----------
    config : FedSSAConfig
    initial_parameters : flwr.common.Parameters, optional
        Initial semantic weights (otherwise the Flower server asks one client).
    min_clients : int
        Clients to wait for before each round (all available clients train; the paper's
        participation fraction is 1).
    seed : int

    Attributes
    ----------
    server : FedSSAServer
        The aggregation logic; ``server.clusters_`` / ``server.history_`` hold the clusters.

    References
    ----------
    Yu, Wan, Chen, Han, Gong, "Heterogeneity-Aware Knowledge Sharing for Graph Federated
    Learning" (FedSSA), ICML 2026, arXiv:2601.21589. Beutel et al., "Flower: A Friendly
    Federated Learning Research Framework", arXiv:2007.14390 (the ``Strategy`` interface).

    Examples
    --------
    >>> from icml26.fedssa import make_csbm_federation, FedSSAConfig
    >>> graphs = make_csbm_federation(n_regions=4, nodes_per_region=20, n_features=8,
    ...                               n_clients=4, seed=0)
    >>> config = FedSSAConfig(hidden=8, latent=4, K=2, local_epochs=1)
    >>> from icml26.fedssa import FedSSAClient, FedSSANumPyClient, FedSSAStrategy, run_inprocess
    >>> config = config.replace(warmup_rounds=1, n_sem_clusters=2, n_str_clusters=2)
    >>> clients = [FedSSANumPyClient(FedSSAClient(g, config, n_classes=5, client_id=i))
    ...            for i, g in enumerate(graphs)]
    >>> strategy = FedSSAStrategy(config, min_clients=4)
    >>> _ = run_inprocess(strategy, clients, rounds=2)
    >>> len(strategy.server.history_), strategy.server.clusters_["semantic"].shape
    (2, (4,))
    """

    def __init__(self, config: FedSSAConfig | None = None, initial_parameters: Parameters | None = None,
                 min_clients: int = 2, seed: int = 0):
        super().__init__()
        self.config = config or FedSSAConfig()
        self.server = FedSSAServer(self.config, seed=seed)
        self.initial_parameters = initial_parameters
        self.min_clients = int(min_clients)
        self._messages: dict = {}
        self._client_of_cid: dict = {}

    def __repr__(self) -> str:
        return f"FedSSAStrategy(warmup_rounds={self.config.warmup_rounds})"

    def initialize_parameters(self, client_manager: ClientManager):
        initial, self.initial_parameters = self.initial_parameters, None
        return initial

    def _instructions(self, parameters, client_manager, ins_type):
        client_manager.wait_for(self.min_clients)
        proxies = sorted(client_manager.all().values(), key=lambda p: p.cid)
        instructions = []
        for proxy in proxies:
            message = self._messages.get(self._client_of_cid.get(proxy.cid))
            if message is None:
                ins = ins_type(parameters, {EXTRAS_KEY: "[]"})
            else:
                extras = {k: v for k, v in message.items() if k != "weights"}
                arrays, keys = pack_arrays(message["weights"], extras)
                ins = ins_type(ndarrays_to_parameters(arrays), {EXTRAS_KEY: keys})
            instructions.append((proxy, ins))
        return instructions

    def configure_fit(self, server_round, parameters, client_manager):
        return self._instructions(parameters, client_manager, FitIns)

    def aggregate_fit(self, server_round, results, failures):
        if not results:
            return None, {}
        payloads = {}
        for proxy, fit_res in results:
            client_id, payload = _payload_from_fit_res(fit_res)
            self._client_of_cid[proxy.cid] = client_id
            payloads[client_id] = payload
        self._messages = self.server.aggregate(payloads, server_round)
        ids = sorted(payloads)
        overall = average_weights([payloads[i]["weights"] for i in ids], [payloads[i]["n_train"] for i in ids])
        metrics = {"val_metric": _scalar(_weighted_metric(results, "val_metric")),
                   "test_metric": _scalar(_weighted_metric(results, "test_metric"))}
        return ndarrays_to_parameters(overall), metrics

    def configure_evaluate(self, server_round, parameters, client_manager):
        return self._instructions(parameters, client_manager, EvaluateIns)

    def aggregate_evaluate(self, server_round, results, failures):
        if not results:
            return None, {}
        return 0.0, {"test_metric": _scalar(_weighted_metric(results, "test_metric"))}

    def evaluate(self, server_round, parameters):
        return None  # no centralised data in subgraph FL


class InProcessClientProxy(ClientProxy):
    """A Flower ``ClientProxy`` that calls a local ``NumPyClient`` directly (no network, no Ray).

    References
    ----------
    Yu, Wan, Chen, Han, Gong, "Heterogeneity-Aware Knowledge Sharing for Graph Federated
    Learning" (FedSSA), ICML 2026, arXiv:2601.21589 (its federations run in process). Beutel et
    al., "Flower: A Friendly Federated Learning Research Framework", arXiv:2007.14390 (the
    ``ClientProxy`` interface the Flower server drives).

    Examples
    --------
    >>> from icml26.fedssa import make_csbm_federation, FedSSAConfig
    >>> graphs = make_csbm_federation(n_regions=4, nodes_per_region=20, n_features=8,
    ...                               n_clients=4, seed=0)
    >>> config = FedSSAConfig(hidden=8, latent=4, K=2, local_epochs=1)
    >>> from flwr.common import GetParametersIns
    >>> from icml26.fedssa import GraphClient, GraphNumPyClient, InProcessClientProxy
    >>> client = GraphNumPyClient(GraphClient(graphs[0], config, n_classes=5))
    >>> proxy = InProcessClientProxy("0", client)
    >>> res = proxy.get_parameters(GetParametersIns(config={}), timeout=None, group_id=0)
    >>> proxy.cid, len(res.parameters.tensors)
    ('0', 13)
    """

    def __init__(self, cid: str, client: NumPyClient):
        super().__init__(cid)
        self.numpy_client = client
        self.client = client.to_client()

    def get_properties(self, ins, timeout, group_id):
        return GetPropertiesRes(status=Status(code=Code.OK, message=""), properties={})

    def get_parameters(self, ins: GetParametersIns, timeout, group_id):
        return self.client.get_parameters(ins)

    def fit(self, ins, timeout, group_id):
        return self.client.fit(ins)

    def evaluate(self, ins, timeout, group_id):
        return self.client.evaluate(ins)

    def reconnect(self, ins, timeout, group_id):
        return DisconnectRes(reason="")
