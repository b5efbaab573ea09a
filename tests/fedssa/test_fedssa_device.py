"""fedssa's torch components on a second device (fake here, CUDA where present)."""

import numpy as np
import pytest
import torch

from devicecheck import DeviceEntry, check_entry, device_cases, forward_backward
from fakecuda import FakeCuda
from icml26.fedssa import (FedSSAClient, FedSSAConfig, FedSSANet, GraphClient, PolyFilter,
                           band_moments, chebyshev_band_moments, classwise_gaussians, gaussian_kl,
                           gaussian_w2, laplacian_spectrum, make_csbm_federation, moment_match,
                           normalized_adjacency, run_federation, spectral_energy)

EDGES = torch.tensor([[0, 1, 2, 3, 4], [1, 2, 3, 4, 0]])
CFG = FedSSAConfig(hidden=8, latent=4, K=2, local_epochs=2)
TRAINING = "input dropout and (FedSSA) the z samples are drawn on the device in training"


def _graphs():
    return make_csbm_federation(n_regions=2, nodes_per_region=20, n_clients=2, n_features=6,
                                seed=0)


def _spectral(dev):
    edges = EDGES.to(dev)
    adj = normalized_adjacency(edges, 5)
    evals, evecs = laplacian_spectrum(edges, 5)
    signal = torch.randn(5, 3, generator=torch.Generator().manual_seed(0)).to(dev)
    exact = band_moments(evals, evecs, signal, 2, n_bands=4)
    cheb = chebyshev_band_moments(adj, signal, 2, n_bands=4, degree=8)
    return {"adj": adj.to_dense(), "evals": evals, "evecs_abs": evecs.abs(), "exact": exact,
            "cheb": cheb, "energy": spectral_energy(torch.ones(3, dtype=torch.float64).to(dev), exact)}


def _net(dev):
    net = FedSSANet(6, 3, hidden=8, latent=4, K=2, dropout=0.0).to(dev).eval()
    x = torch.randn(5, 6, generator=torch.Generator().manual_seed(1)).to(dev)
    adj = normalized_adjacency(EDGES.to(dev), 5)
    out = forward_backward(net, x, adj, reduce=lambda o: o["logits"].sum())
    out["response"] = net.filter.frequency_response(torch.linspace(0, 2, 5).to(dev))
    return out


def _gaussians(dev):
    mu = torch.randn(6, 2, generator=torch.Generator().manual_seed(2)).to(dev)
    m, s, n = classwise_gaussians(mu, torch.zeros(6, 2).to(dev), torch.tensor([0, 0, 1, 1, 2, 2]).to(dev),
                                  torch.tensor([True] * 5 + [False]).to(dev), 3)
    return {"m": m, "s": s, "n": n, "kl": gaussian_kl(m, s, m.flip(0), s.flip(0)),
            "w2": gaussian_w2(m, s, m.flip(0), s.flip(0)),
            "match": moment_match(m, s, torch.tensor([1.0, 2.0, 3.0]).to(dev))}


def _client(cls):
    def run(dev):
        client = cls(_graphs()[0], CFG, n_classes=5, seed=0, device=dev)
        payload = client.fit({}) if cls is FedSSAClient else client.train_round()
        return {"payload": payload, "eval": client.evaluate(), "weights": client.get_weights()}
    return run


def _federation(algorithm):
    def run(dev):
        h = run_federation(algorithm, _graphs(), CFG, rounds=2, seed=0, device=dev)
        return {"test": h.test, "val": h.val}
    return run


ENTRIES = [
    DeviceEntry("fedssa.normalized_adjacency", _spectral,
                covers=("fedssa.laplacian_spectrum", "fedssa.band_moments",
                        "fedssa.chebyshev_band_moments", "fedssa.spectral_energy")),
    DeviceEntry("fedssa.FedSSANet", _net, covers=("fedssa.PolyFilter",)),
    DeviceEntry("fedssa.PolyFilter frequency response of CPU eigenvalues",
                lambda dev: PolyFilter(K=3).to(dev).frequency_response(torch.linspace(0, 2, 4))),
    DeviceEntry("fedssa.classwise_gaussians", _gaussians,
                covers=("fedssa.gaussian_kl", "fedssa.gaussian_w2", "fedssa.moment_match")),
    DeviceEntry("fedssa.GraphClient", _client(GraphClient), outputs="any", rng_draws=("dropout",),
                note=TRAINING),
    DeviceEntry("fedssa.FedSSAClient", _client(FedSSAClient), outputs="any",
                rng_draws=("dropout", "randn_like"), note=TRAINING),
    DeviceEntry("fedssa.run_federation fedssa", _federation("fedssa"),
                rng_draws=("dropout", "randn_like"),
                covers=("fedssa.FedSSAServer", "fedssa.FedSSAStrategy", "fedssa.FedSSANumPyClient",
                        "fedssa.run_inprocess", "fedssa.InProcessClientProxy", "fedssa.History",
                        "fedssa.FedSSAConfig"),
                note=TRAINING),
    DeviceEntry("fedssa.run_federation fedprox", _federation("fedprox"), rng_draws=("dropout",),
                covers=("fedssa.GraphNumPyClient", "fedssa.make_fedprox"), note=TRAINING),
]

NO_DEVICE = {
    "ClientGraph": "a container; ClientGraph.to(device) moves it (clients do)",
    "make_csbm_federation": "builds seeded CPU graphs",
    "louvain_partition": "networkx community detection (numpy out)",
    "metis_partition": "pymetis partition (numpy out)",
    "from_pyg": "slices a graph into CPU ClientGraphs",
    "high_band_mass": "numpy arithmetic on signatures",
    "js_distance_matrix": "numpy distances between signatures",
    "cluster_distances": "numpy/scipy clustering on the server",
    "semantic_distance_matrix": "server-side math on numpy payloads",
    "LocalStrategy": "a Flower strategy over numpy messages",
    "GCFLStrategy": "a Flower strategy over numpy messages",
    "make_fedavg": "Flower's FedAvg over numpy messages",
}


@pytest.mark.parametrize("entry, kind", device_cases(ENTRIES))
def test_device(entry, kind):
    check_entry(entry, kind)


def test_client_device_is_validated():
    with pytest.raises(ValueError, match="device must be"):
        GraphClient(_graphs()[0], CFG, n_classes=5, device="gpu")


def test_client_graph_and_network_live_on_the_device():
    with FakeCuda() as fake:
        client = FedSSAClient(_graphs()[0], CFG, n_classes=5, device="cuda")
        assert client.graph.x.device == fake.device and client.adj.device == fake.device
        assert {p.device for p in client.net.parameters()} == {fake.device}
        payload = client.fit({})
        assert all(isinstance(w, np.ndarray) for w in payload["weights"])
