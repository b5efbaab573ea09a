import pytest
import torch

from icml26.fedssa import make_csbm_federation


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def tiny_federation():
    """Four clients (one per region: homo-A, homo-B, hetero-A, hetero-B), 60 nodes each."""
    return make_csbm_federation(n_regions=4, nodes_per_region=60, n_features=16, n_clients=4, seed=0)
