"""FedSSA's server: distances, clustering, representatives, edge cases."""

import numpy as np
import pytest
import torch

from icml26.fedssa import (FedSSAClient, FedSSAConfig, FedSSAServer, cluster_distances,
                           gaussian_w2, semantic_distance_matrix)
from icml26.fedssa.fedssa import resolve_n_clusters


def _payload(mean, signature, counts=(10.0, 10.0), n_weights=3, weight=0.0):
    counts = np.asarray(counts, dtype=float)
    return {"weights": [np.full(n_weights, weight, dtype=np.float32)], "n_train": int(counts.sum()),
            "n_nodes": 50, "class_means": np.full((len(counts), 2), mean),
            "class_stds": np.ones((len(counts), 2)), "class_counts": counts,
            "gamma": np.full(3, mean), "signature": np.asarray(signature, dtype=float)}


def test_semantic_distance_matches_direct_weighted_w2_and_skips_missing_classes():
    rng = np.random.default_rng(0)
    means, stds = rng.normal(size=(3, 4, 2)), rng.uniform(0.5, 1.5, size=(3, 4, 2))
    counts = np.array([[5, 0, 3, 2], [1, 4, 0, 6], [0, 0, 0, 0]], dtype=float)
    d = semantic_distance_matrix(means, stds, counts)
    num = den = 0.0
    for c in range(4):
        w = min(counts[0, c], counts[1, c])
        if w:
            num += w * float(gaussian_w2(torch.tensor(means[0, c]), torch.tensor(stds[0, c]),
                                         torch.tensor(means[1, c]), torch.tensor(stds[1, c])))
            den += w
    assert d[0, 1] == pytest.approx(num / den)
    assert d[0, 2] == pytest.approx(d[0, 1]) and d[1, 2] == pytest.approx(d[0, 1])  # no shared class: max
    assert np.allclose(d, d.T) and np.all(np.diag(d) == 0)


def test_clusters_are_canonical_and_deterministic():
    d = np.array([[0, 1, 9, 9], [1, 0, 9, 9], [9, 9, 0, 1], [9, 9, 1, 0]], dtype=float)
    assert cluster_distances(d[::-1, ::-1].copy(), 2).tolist() == [0, 0, 1, 1]
    assert cluster_distances(d, "auto").tolist() == [0, 0, 1, 1]


def test_server_recovers_both_axes_and_builds_moment_matched_representatives():
    server = FedSSAServer(FedSSAConfig(warmup_rounds=0, n_sem_clusters=2, n_str_clusters=2))
    payloads = {0: _payload(0.0, [0.9, 0.1]), 1: _payload(0.2, [0.1, 0.9]),
                2: _payload(5.0, [0.9, 0.1]), 3: _payload(5.4, [0.1, 0.9])}
    messages = server.aggregate(payloads)
    assert server.clusters_["semantic"].tolist() == [0, 0, 1, 1]
    assert server.clusters_["structural"].tolist() == [0, 1, 0, 1]
    assert np.allclose(messages[0]["rep_means"], 0.1)
    assert np.allclose(messages[0]["rep_stds"] ** 2, 1 + 0.01)  # mixture of N(0,1), N(0.2,1)
    assert np.allclose(messages[1]["gamma_bar"], (0.2 + 5.4) / 2)


def test_warmup_rounds_send_one_global_average_and_no_alignment():
    server = FedSSAServer(FedSSAConfig(warmup_rounds=2, n_sem_clusters=2, n_str_clusters=2))
    payloads = {i: _payload(float(i), [0.5, 0.5], weight=float(i)) for i in range(4)}
    messages = server.aggregate(payloads)
    # no alignment targets in warm-up; only the class-conditional prior (issue #37)
    assert set(messages[0]) == {"weights", "prior_means", "prior_stds", "prior_present"}
    assert np.allclose(messages[3]["weights"][0], 1.5)


def test_k_larger_than_number_of_clients_raises():
    server = FedSSAServer(FedSSAConfig(warmup_rounds=0, n_sem_clusters=5))
    with pytest.raises(ValueError, match="n_sem_clusters=5 is larger than the number of clients"):
        server.aggregate({i: _payload(float(i), [0.5, 0.5]) for i in range(3)})
    assert resolve_n_clusters(None, 8, "k") == 3


def test_client_without_labelled_nodes_goes_to_nearest_cluster_or_raises_when_strict():
    payloads = {0: _payload(0.0, [0.9, 0.1], weight=1.0), 1: _payload(0.1, [0.9, 0.1], weight=1.0),
                2: _payload(5.0, [0.1, 0.9], weight=-1.0), 3: _payload(5.1, [0.1, 0.9], weight=-1.0),
                4: _payload(0.0, [0.1, 0.9], counts=(0.0, 0.0), weight=-0.9)}
    server = FedSSAServer(FedSSAConfig(warmup_rounds=0, n_sem_clusters=2, n_str_clusters=2))
    server.aggregate(payloads)
    assert server.clusters_["semantic"].tolist() == [0, 0, 1, 1, 1]
    strict = FedSSAServer(FedSSAConfig(warmup_rounds=0, n_sem_clusters=2, strict=True))
    with pytest.raises(ValueError, match=r"clients \[4\] have no labelled nodes"):
        strict.aggregate(payloads)


def test_single_client_runs_as_local_with_warning():
    with pytest.warns(UserWarning, match="single client"):
        messages = FedSSAServer(FedSSAConfig(warmup_rounds=0)).aggregate({0: _payload(0.0, [0.5, 0.5])})
    assert set(messages[0]) == {"weights"}


def test_shuffled_control_permutes_cluster_labels():
    payloads = {i: _payload(5.0 * (i // 4), [0.9, 0.1] if i % 2 else [0.1, 0.9]) for i in range(8)}
    cfg = FedSSAConfig(warmup_rounds=0, n_sem_clusters=2, n_str_clusters=2)
    honest = FedSSAServer(cfg)
    shuffled = FedSSAServer(cfg.replace(shuffle_clusters=True), seed=0)
    honest.aggregate(payloads)
    differs = False
    for r in range(5):
        shuffled.aggregate(payloads)
        differs |= shuffled.clusters_["semantic"].tolist() != honest.clusters_["semantic"].tolist()
    assert differs


def test_client_without_train_nodes_uploads_zero_counts(tiny_federation):
    g = tiny_federation[0]
    from icml26.fedssa import ClientGraph
    blank = ClientGraph(g.x, g.edge_index, g.y, torch.zeros_like(g.train_mask), g.val_mask, g.test_mask)
    client = FedSSAClient(blank, FedSSAConfig(hidden=8, latent=4, K=2), n_classes=5)
    payload = client.fit({})
    assert payload["class_counts"].sum() == 0 and np.isfinite(payload["loss"])


def test_label_beyond_n_classes_raises(tiny_federation):
    with pytest.raises(ValueError, match="n_classes=2"):
        FedSSAClient(tiny_federation[0], FedSSAConfig(hidden=8, latent=4, K=2), n_classes=2)


def test_config_rejects_bad_values():
    with pytest.raises(ValueError, match="share_filter"):
        FedSSAConfig(share_filter="medium")
    with pytest.raises(ValueError, match="lr"):
        FedSSAConfig(lr=0.0)
    with pytest.raises(ValueError, match="n_sem_clusters"):
        FedSSAConfig(n_sem_clusters=0)
