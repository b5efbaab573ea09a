"""Flower integration: the strategies run in Flower's own Server; runs are deterministic."""

import numpy as np
import pytest

from flwr.server import Server
from flwr.server.client_manager import SimpleClientManager

from icml26.fedssa import (ALGORITHMS, FedSSAClient, FedSSAConfig, FedSSANumPyClient, FedSSAStrategy,
                           InProcessClientProxy, run_federation)
from icml26.fedssa.flower import pack_arrays, unpack_arrays

TINY = FedSSAConfig(hidden=8, latent=4, K=2, n_sem_clusters=2, n_str_clusters=2, warmup_rounds=1)


def test_pack_unpack_round_trip():
    arrays, keys = pack_arrays([np.ones(2), np.zeros(3)], {"gamma_bar": np.arange(3.0), "skip": None})
    weights, extras = unpack_arrays(arrays, keys)
    assert len(weights) == 2 and list(extras) == ["gamma_bar"] and np.allclose(extras["gamma_bar"], [0, 1, 2])


def test_fedssa_strategy_runs_in_flowers_own_server(tiny_federation):
    manager = SimpleClientManager()
    clients = [FedSSAClient(g, TINY, n_classes=5, client_id=i) for i, g in enumerate(tiny_federation)]
    for i, c in enumerate(clients):
        manager.register(InProcessClientProxy(f"node-{i}", FedSSANumPyClient(c)))
    strategy = FedSSAStrategy(TINY, min_clients=4)
    server = Server(client_manager=manager, strategy=strategy)
    server.set_max_workers(1)
    history, _ = server.fit(num_rounds=3, timeout=None)
    assert len(strategy.server.history_) == 3
    assert strategy.server.clusters_["warm"] is False
    assert history.metrics_distributed_fit == {} or isinstance(history.metrics_distributed_fit, dict)
    assert all(c.round_ == 3 for c in clients)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_every_algorithm_is_deterministic_given_seed(tiny_federation, algorithm):
    a = run_federation(algorithm, tiny_federation, TINY, rounds=3, seed=4)
    b = run_federation(algorithm, tiny_federation, TINY, rounds=3, seed=4)
    assert np.array_equal(a.test, b.test) and np.isfinite(a.score())
    assert a.test.shape == (3, 4)


def test_local_and_fedavg_diverge_after_aggregation(tiny_federation):
    local = run_federation("local", tiny_federation, TINY, rounds=4, seed=0)
    fedavg = run_federation("fedavg", tiny_federation, TINY, rounds=4, seed=0)
    assert np.array_equal(local.test[0], fedavg.test[0])  # same init, one identical local step
    w_local = [c.get_weights() for c in local.clients]
    w_avg = [c.get_weights() for c in fedavg.clients]
    assert any(not np.allclose(a[0], b[0]) for a, b in zip(w_local, w_avg))


def test_fedper_keeps_heads_personal_and_shares_the_body(tiny_federation):
    h = run_federation("fedper", tiny_federation, TINY.replace(local_epochs=1), rounds=2, seed=0)
    names = h.clients[0].names
    body = names.index("encoder.weight")
    head = names.index("classifier.weight")
    w = [c.get_weights() for c in h.clients]
    assert not np.allclose(w[0][head], w[1][head])
    # after the last round each body took one local step (local_epochs=1) from the same average:
    # close, not equal
    assert np.abs(w[0][body] - w[1][body]).max() < 0.05


def test_unknown_algorithm_raises(tiny_federation):
    with pytest.raises(ValueError, match="algorithm must be one of"):
        run_federation("scaffold", tiny_federation, TINY, rounds=1)
