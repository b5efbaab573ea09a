"""Class-wise Gaussians, divergences and the ELBO against direct computations."""

import math

import numpy as np
import pytest
import torch

from icml26.fedssa import (FedSSANet, classwise_gaussians, gaussian_kl, gaussian_w2, moment_match,
                           normalized_adjacency)
from icml26.fedssa.model import elbo_loss


def test_classwise_gaussians_match_a_direct_loop():
    torch.manual_seed(0)
    mu, logvar = torch.randn(20, 3), torch.randn(20, 3)
    y = torch.randint(0, 4, (20,))
    y[y == 3] = 2  # class 3 absent
    mask = torch.rand(20) < 0.7
    means, stds, counts = classwise_gaussians(mu, logvar, y, mask, 4)
    for c in range(3):
        sel = mask & (y == c)
        assert counts[c] == sel.sum()
        if not bool(sel.any()):
            continue
        m = mu[sel].mean(0)
        v = (logvar[sel].exp() + mu[sel] ** 2).mean(0) - m ** 2
        assert torch.allclose(means[c], m, atol=1e-6)
        assert torch.allclose(stds[c] ** 2, v.clamp_min(1e-6), atol=1e-5)
    assert (counts[:3] > 0).sum() >= 2 and counts[3] == 0 and torch.all(means[3] == 0) and torch.all(stds[3] == 1)


def test_gaussian_kl_matches_torch_distributions():
    torch.manual_seed(1)
    m1, m2 = torch.randn(5, 3), torch.randn(5, 3)
    s1, s2 = torch.rand(5, 3) + 0.2, torch.rand(5, 3) + 0.2
    p = torch.distributions.Independent(torch.distributions.Normal(m1, s1), 1)
    q = torch.distributions.Independent(torch.distributions.Normal(m2, s2), 1)
    assert torch.allclose(gaussian_kl(m1, s1, m2, s2), torch.distributions.kl_divergence(p, q), atol=1e-5)
    assert torch.all(gaussian_kl(m1, s1, m1, s1).abs() < 1e-6)


def test_w2_and_moment_match():
    assert float(gaussian_w2(torch.zeros(2), torch.ones(2), torch.ones(2), 2 * torch.ones(2))) == pytest.approx(4.0)
    means = np.array([[0.0], [2.0]])
    stds = np.array([[1.0], [1.0]])
    mean, std = moment_match(means, stds, np.array([1.0, 3.0]))
    # mixture 0.25 N(0,1) + 0.75 N(2,1): mean 1.5, var = 1 + 0.25*0.75*4 = 1.75
    assert float(mean) == pytest.approx(1.5) and float(std) ** 2 == pytest.approx(1.75)
    with pytest.raises(ValueError, match="non-negative"):
        moment_match(means, stds, np.array([0.0, 0.0]))


def test_network_shapes_eval_is_deterministic_and_elbo_is_the_direct_value():
    torch.manual_seed(0)
    net = FedSSANet(4, 3, hidden=8, latent=2, K=2, dropout=0.0)
    adj = normalized_adjacency(torch.tensor([[0, 1, 2], [1, 2, 3]]), 4)
    x, y = torch.randn(4, 4), torch.tensor([0, 1, 2, 0])
    net.eval()
    assert torch.equal(net(x, adj)["logits"], net(x, adj)["logits"])
    out = net(x, adj)
    mask = torch.tensor([True, True, False, True])
    got = elbo_loss(net, x, y, out, mask)
    recon = net.decode(out["z"], y)
    nll = 0.5 * ((x - recon) ** 2).sum(1) + 2 * math.log(2 * math.pi)
    kl = 0.5 * (out["mu"] ** 2 + out["logvar"].exp() - 1 - out["logvar"]).sum(1)
    assert torch.isclose(got, (nll + kl)[mask].mean())


def test_network_rejects_bad_sizes():
    with pytest.raises(ValueError, match="n_features"):
        FedSSANet(0, 3)
    with pytest.raises(ValueError, match="likelihood"):
        FedSSANet(3, 3, likelihood="poisson")
