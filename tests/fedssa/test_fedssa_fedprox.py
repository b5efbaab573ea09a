"""FedProx's proximal term acts: its gradient, its pull towards the global weights, and Flower's
``FedProx`` handing ``proximal_mu`` to the clients."""

import numpy as np
import torch
from flwr.common import FitIns, ndarrays_to_parameters
from flwr.server.client_manager import SimpleClientManager

from icml26.fedssa import (FedSSAConfig, GraphClient, GraphNumPyClient, InProcessClientProxy,
                           make_fedprox, run_federation)

TINY = FedSSAConfig(hidden=8, latent=4, K=2)


def _flat(weights):
    return np.concatenate([np.ravel(w) for w in weights])


def test_prox_gradient_equals_mu_times_the_displacement(tiny_federation):
    client = GraphClient(tiny_federation[0], TINY, 5)
    anchor = {n: p.detach() + 0.3 * torch.randn_like(p) for n, p in client.net.named_parameters()}
    mu = 0.7
    out = client.net(client.graph.x, client.adj)
    loss = client.extra_loss(out, {"proximal_mu": mu, "prox_anchor": anchor})
    direct = 0.5 * mu * sum(float(((p.detach() - anchor[n]) ** 2).sum())
                            for n, p in client.net.named_parameters())
    assert np.isclose(float(loss.detach()), direct, rtol=1e-5)
    loss.backward()
    for name, p in client.net.named_parameters():
        assert torch.allclose(p.grad, mu * (p.detach() - anchor[name]), atol=1e-6), name


def _local_update(graph, mu, epochs, seed=0):
    """One Flower fit from the same global weights; returns (global, new) flat weights."""
    client = GraphNumPyClient(GraphClient(graph, TINY.replace(local_epochs=epochs), 5, seed=seed))
    start = client.get_parameters({})
    config = {"proximal_mu": mu} if mu > 0 else {}
    new, _, _ = client.fit(start, config)
    return _flat(start), _flat(new)


def test_proximal_term_shortens_a_multi_step_local_update(tiny_federation):
    g0, plain = _local_update(tiny_federation[0], 0.0, epochs=8)
    _, prox = _local_update(tiny_federation[0], 5.0, epochs=8)
    assert not np.allclose(plain, prox)
    assert np.linalg.norm(prox - g0) < 0.9 * np.linalg.norm(plain - g0)


def test_one_local_step_makes_fedprox_exactly_fedavg(tiny_federation):
    # the local step starts at the global weights, where the proximal gradient mu(w - w_g) is 0:
    # with local_epochs=1 FedProx and FedAvg give the same numbers, whatever mu
    g0, plain = _local_update(tiny_federation[0], 0.0, epochs=1)
    _, prox = _local_update(tiny_federation[0], 5.0, epochs=1)
    assert np.array_equal(plain, prox)
    config = TINY.replace(prox_mu=5.0, local_epochs=1)
    fedavg = run_federation("fedavg", tiny_federation, config, rounds=3, seed=0)
    fedprox = run_federation("fedprox", tiny_federation, config, rounds=3, seed=0)
    assert np.array_equal(fedavg.test, fedprox.test)


def test_fedprox_differs_from_fedavg_iff_mu_positive_with_several_local_steps(tiny_federation):
    # issue #37: every method runs >= 5 local steps by default, so FedProx acts
    assert FedSSAConfig().local_epochs >= 5 and TINY.local_epochs >= 5
    fedavg = run_federation("fedavg", tiny_federation, TINY, rounds=3, seed=0)
    same = run_federation("fedprox", tiny_federation, TINY.replace(prox_mu=0.0), rounds=3, seed=0)
    assert np.array_equal(fedavg.test, same.test)
    assert np.array_equal(_flat(fedavg.clients[0].get_weights()), _flat(same.clients[0].get_weights()))
    prox = run_federation("fedprox", tiny_federation, TINY.replace(prox_mu=0.5), rounds=3, seed=0)
    assert not np.allclose(_flat(fedavg.clients[0].get_weights()), _flat(prox.clients[0].get_weights()))


def test_experiment_runs_every_method_with_the_same_local_steps():
    from icml26.fedssa.experiment import FederationConfig, _fedssa_config
    config = FederationConfig()
    assert config.local_epochs >= 5
    for method in ("fedssa", "fedavg", "fedprox", "local", "fedper", "gcfl", "fedssa-shuffled"):
        assert _fedssa_config(config, method).local_epochs == config.local_epochs


def test_flowers_fedprox_sends_proximal_mu_to_every_client(tiny_federation):
    manager = SimpleClientManager()
    for i, g in enumerate(tiny_federation):
        manager.register(InProcessClientProxy(str(i), GraphNumPyClient(GraphClient(g, TINY, 5))))
    strategy = make_fedprox(len(tiny_federation), proximal_mu=0.25)
    params = ndarrays_to_parameters(GraphClient(tiny_federation[0], TINY, 5).get_weights())
    instructions = strategy.configure_fit(1, params, manager)
    assert len(instructions) == 4
    assert all(isinstance(ins, FitIns) and ins.config["proximal_mu"] == 0.25 for _, ins in instructions)
