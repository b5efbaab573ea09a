"""Issue #37: the ELBO's class-conditional prior N(μ_y, diag σ_y²) is the shared class-wise
Gaussians; N(0, I) stays reachable; the server sends the prior; oracle semantic clusters."""

import numpy as np
import pytest
import torch

from icml26.fedssa import FedSSAClient, FedSSAConfig, FedSSAServer, run_federation
from icml26.fedssa.model import FedSSANet, elbo_loss
from icml26.fedssa.spectral import normalized_adjacency

TINY = dict(hidden=8, latent=4, K=2, warmup_rounds=1, n_sem_clusters=2, n_str_clusters=2)


def _net_and_out():
    torch.manual_seed(0)
    net = FedSSANet(4, 3, hidden=8, latent=2, K=2, dropout=0.0)
    adj = normalized_adjacency(torch.tensor([[0, 1, 2], [1, 2, 3]]), 4)
    x, y = torch.randn(4, 4), torch.tensor([0, 1, 2, 0])
    net.eval()
    return net, x, y, net(x, adj), torch.tensor([True, True, False, True])


def test_class_prior_kl_is_the_closed_form_against_each_nodes_class_gaussian():
    net, x, y, out, mask = _net_and_out()
    means = torch.tensor([[1.0, -1.0], [0.5, 0.0], [9.0, 9.0]])
    stds = torch.tensor([[2.0, 0.5], [1.0, 1.0], [3.0, 3.0]])
    got = elbo_loss(net, x, y, out, mask, prior_means=means, prior_stds=stds)
    standard = elbo_loss(net, x, y, out, mask)
    recon = net.decode(out["z"], y)
    nll = 0.5 * ((x - recon) ** 2).sum(1) + 2 * np.log(2 * np.pi)
    pm, pv = means[y], stds[y] ** 2
    var = out["logvar"].exp()
    kl = 0.5 * ((var + (out["mu"] - pm) ** 2) / pv - 1 + pv.log() - out["logvar"]).sum(1)
    assert torch.isclose(got, (nll + kl)[mask].mean())
    assert not torch.isclose(got, standard)
    same = elbo_loss(net, x, y, out, mask, prior_means=torch.zeros(3, 2), prior_stds=torch.ones(3, 2))
    assert torch.isclose(same, standard)
    with pytest.raises(ValueError, match="together"):
        elbo_loss(net, x, y, out, mask, prior_means=means)


def test_client_uses_the_received_prior_and_standard_prior_ignores_it(tiny_federation):
    g = tiny_federation[0]
    losses = {}
    for prior in ("class", "standard"):
        for shift in (0.0, 3.0):
            client = FedSSAClient(g, FedSSAConfig(**TINY, prior=prior, beta_elbo=1.0, lambda_sem=0.0), 5)
            client.net.eval()
            out = client.net(g.x, client.adj)
            ctx = {"prior": (torch.full((5, 4), shift), torch.ones(5, 4), torch.ones(5, dtype=torch.bool))}
            losses[prior, shift] = float(client.extra_loss(out, ctx).detach())
    assert losses["class", 0.0] != losses["class", 3.0]
    assert losses["standard", 0.0] == losses["standard", 3.0]
    assert losses["standard", 0.0] == pytest.approx(losses["class", 0.0], rel=1e-5)


def test_server_sends_the_prior_in_warmup_and_the_cluster_representatives_after(tiny_federation):
    config = FedSSAConfig(**TINY)
    clients = [FedSSAClient(g, config, 5, client_id=i) for i, g in enumerate(tiny_federation)]
    server = FedSSAServer(config)
    payloads = {i: c.fit({}) for i, c in enumerate(clients)}
    warm = server.aggregate(payloads)
    assert all("prior_means" in m and "rep_means" not in m for m in warm.values())
    payloads = {i: c.fit(warm[i]) for i, c in enumerate(clients)}
    messages = server.aggregate(payloads)
    for m in messages.values():
        assert np.array_equal(m["prior_means"], m["rep_means"]) and np.array_equal(m["prior_stds"], m["rep_stds"])


def test_defaults_of_issue_37():
    config = FedSSAConfig()
    assert config.prior == "class" and config.semantic_reference == "initial" and config.local_epochs >= 5
    with pytest.raises(ValueError, match="prior must be one of"):
        FedSSAConfig(prior="vampprior")


def test_fixed_semantic_clusters_replace_the_clustering(tiny_federation):
    config = FedSSAConfig(**TINY, fixed_semantic_clusters=(1, 0, 1, 0))
    h = run_federation("fedssa", tiny_federation, config, rounds=3, seed=0)
    assert h.clusters[-1]["semantic"].tolist() == [0, 1, 0, 1]
    with pytest.raises(ValueError, match="fixed_semantic_clusters"):
        FedSSAConfig(fixed_semantic_clusters=(-1, 0))


def test_same_seed_same_numbers_with_the_class_prior(tiny_federation):
    config = FedSSAConfig(**TINY)
    a = run_federation("fedssa", tiny_federation, config, rounds=3, seed=1)
    b = run_federation("fedssa", tiny_federation, config, rounds=3, seed=1)
    assert np.array_equal(a.test, b.test)


def test_semantic_alignment_acts_only_when_lambda_sem_positive(tiny_federation):
    g = tiny_federation[0]
    losses = {}
    for lam in (0.0, 0.5):
        client = FedSSAClient(g, FedSSAConfig(**TINY, beta_elbo=0.0, lambda_sem=lam), 5)
        client.net.eval()
        out = client.net(g.x, client.adj)
        reps = (torch.full((5, 4), 2.0), torch.ones(5, 4), torch.ones(5, dtype=torch.bool))
        losses[lam] = (float(client.extra_loss(out, {}).detach()),
                       float(client.extra_loss(out, {"representatives": reps}).detach()))
    assert losses[0.0][0] == losses[0.0][1] == 0.0
    assert losses[0.5][1] > losses[0.5][0] + 1e-3
