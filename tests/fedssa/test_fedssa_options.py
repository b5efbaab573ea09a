"""FedSSA's configurable options and the binary (ROC-AUC) task run end to end."""

import numpy as np
import pytest
import torch

from icml26.fedssa import ClientGraph, FedSSAClient, FedSSAConfig, run_federation

TINY = dict(hidden=8, latent=4, K=2, warmup_rounds=1)


@pytest.mark.parametrize("options", [
    {"structure_metric": "grassmann", "n_sem_clusters": 2, "n_str_clusters": 2},
    {"cluster_method": "kmeans", "n_sem_clusters": 2, "n_str_clusters": "auto"},
    {"share_filter": "hard", "decoder": "features+adjacency", "dp_sigma": 0.1, "rho": 0.5, "encoder": "gcn"},
])
def test_options_run_and_stay_finite(tiny_federation, options):
    h = run_federation("fedssa", tiny_federation, FedSSAConfig(**TINY, **options), rounds=3, seed=0)
    assert np.isfinite(h.score()) and len(h.clusters) == 3


def test_hard_filter_sharing_overwrites_gamma(tiny_federation):
    client = FedSSAClient(tiny_federation[0], FedSSAConfig(**TINY, share_filter="hard", lr=1e-12), 5)
    client.fit({"gamma_bar": np.array([0.5, 0.25, 0.25])})
    assert np.allclose(client.net.filter.gamma.detach().numpy(), [0.5, 0.25, 0.25], atol=1e-6)


def test_chebyshev_path_is_chosen_above_the_eigh_limit(tiny_federation):
    client = FedSSAClient(tiny_federation[0], FedSSAConfig(**TINY, eigh_max_nodes=10), 5)
    assert client.energy_method == "chebyshev"
    payload = client.fit({})
    assert np.isclose(payload["signature"].sum(), 1.0)


def test_binary_task_reports_roc_auc_and_skips_single_class_test_sets(tiny_federation):
    graphs = []
    for i, g in enumerate(tiny_federation):
        y = (g.y % 2).float()
        if i == 0:  # one client whose test nodes are all of one class
            y = torch.where(g.test_mask, torch.zeros_like(y), y)
        graphs.append(ClientGraph(g.x, g.edge_index, y, g.train_mask, g.val_mask, g.test_mask, g.meta))
    h = run_federation("fedssa", graphs, FedSSAConfig(**TINY, n_sem_clusters=2, n_str_clusters=2), rounds=3)
    assert h.n_skipped == 1 and 0.0 <= h.score() <= 1.0
    fedavg = run_federation("fedavg", graphs, FedSSAConfig(**TINY), rounds=2)
    assert np.isnan(fedavg.test[:, 0]).all() and np.isfinite(fedavg.test[:, 1:]).all()
