"""``semantic_reference``: the class-wise Gaussians the server clusters on, in the client's own or a
common latent space."""

import numpy as np
import pytest
import torch

from icml26.fedssa import FedSSAClient, FedSSAConfig, FedSSAServer, classwise_gaussians, run_federation

TINY = dict(hidden=8, latent=4, K=2, warmup_rounds=1, n_sem_clusters=2, n_str_clusters=2)


def _payload(mean, cluster_mean=None):
    p = {"weights": [np.zeros(2, np.float32)], "n_train": 10, "n_nodes": 20,
         "class_means": np.full((1, 2), mean), "class_stds": np.ones((1, 2)),
         "class_counts": np.array([10.0]), "gamma": np.ones(3), "signature": np.array([0.5, 0.5])}
    if cluster_mean is not None:
        p["cluster_means"], p["cluster_stds"] = np.full((1, 2), cluster_mean), np.ones((1, 2))
    return p


def test_server_clusters_on_the_reference_statistics_when_sent():
    own = {0: _payload(0.0), 1: _payload(0.1), 2: _payload(5.0), 3: _payload(5.1)}
    server = FedSSAServer(FedSSAConfig(warmup_rounds=0, n_sem_clusters=2, n_str_clusters=2))
    server.aggregate(own)
    assert server.clusters_["semantic"].tolist() == [0, 0, 1, 1]
    crossed = {i: _payload(p["class_means"][0, 0], c) for (i, p), c in zip(own.items(), (0.0, 5.0, 0.1, 5.1))}
    server = FedSSAServer(FedSSAConfig(warmup_rounds=0, n_sem_clusters=2, n_str_clusters=2))
    server.aggregate(crossed)
    assert server.clusters_["semantic"].tolist() == [0, 1, 0, 1]


def test_initial_reference_uses_the_initial_encoder_after_training(tiny_federation):
    g = tiny_federation[0]
    client = FedSSAClient(g, FedSSAConfig(**TINY, semantic_reference="initial"), 5)
    client.net.eval()
    with torch.no_grad():
        mu, logvar = client.net.encode(g.x, client.adj)
    expected, _, _ = classwise_gaussians(mu, logvar, g.y, g.train_mask, 5)
    for _ in range(3):
        payload = client.fit({})
    assert np.allclose(payload["cluster_means"], expected.numpy(), atol=1e-6)
    assert not np.allclose(payload["class_means"], payload["cluster_means"], atol=1e-3)
    assert "cluster_means" not in FedSSAClient(g, FedSSAConfig(**TINY, semantic_reference="own"), 5).fit({})


def test_global_reference_is_the_federation_average_and_is_checked(tiny_federation):
    config = FedSSAConfig(**TINY, semantic_reference="global")
    h = run_federation("fedssa", tiny_federation, config, rounds=3, seed=0)
    assert np.isfinite(h.score())
    clients = h.clients
    messages = FedSSAServer(config).aggregate({c.client_id: c.payload() for c in clients}, server_round=5)
    ref = messages[0]["reference_weights"]
    sizes = [c.n_train for c in clients]
    expected = sum(n * np.concatenate([np.ravel(w) for w in c.get_weights(c.semantic_names)])
                   for n, c in zip(sizes, clients)) / sum(sizes)
    assert ref.ndim == 1 and np.allclose(ref, expected, atol=1e-5)
    clients[0].fit(messages[0])
    loaded = np.concatenate([p.detach().numpy().ravel() for n, p in clients[0]._reference_net.named_parameters()
                             if n in clients[0].semantic_names])
    assert np.allclose(loaded, ref)
    with pytest.raises(ValueError, match="reference_weights must be a flat vector"):
        clients[0].fit({"reference_weights": ref[:-1]})


def test_unknown_semantic_reference_raises():
    with pytest.raises(ValueError, match="semantic_reference must be one of"):
        FedSSAConfig(semantic_reference="shared")
