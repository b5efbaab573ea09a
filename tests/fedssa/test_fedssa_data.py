"""ClientGraph validation, Louvain partition and the CSBM generator's ground truth."""

import numpy as np
import pytest
import torch

from icml26.fedssa import ClientGraph, louvain_partition, make_csbm_federation


def _graph(**changes):
    n = 4
    args = dict(x=torch.randn(n, 3), edge_index=torch.tensor([[0, 1, 2], [1, 2, 3]]),
                y=torch.tensor([0, 1, 0, 1]), train_mask=torch.tensor([True, True, False, False]),
                val_mask=torch.tensor([False, False, True, False]),
                test_mask=torch.tensor([False, False, False, True]))
    args.update(changes)
    return ClientGraph(**args)


def test_edge_index_out_of_range_names_the_max_index():
    with pytest.raises(ValueError, match="edge_index has max index 7 but the graph has 4 nodes"):
        _graph(edge_index=torch.tensor([[0, 7], [1, 2]]))


def test_edge_index_must_be_int64_of_shape_2_by_e():
    with pytest.raises(ValueError, match="dtype int64"):
        _graph(edge_index=torch.tensor([[0, 1]], dtype=torch.int32))
    with pytest.raises(ValueError, match=r"shape \[2, e\]"):
        _graph(edge_index=torch.tensor([[0, 1, 2]]))


def test_nan_features_rejected():
    x = torch.randn(4, 3)
    x[1, 2] = float("nan")
    with pytest.raises(ValueError, match="x contains NaN"):
        _graph(x=x)


def test_label_and_mask_checks():
    with pytest.raises(ValueError, match="y must be a 1-D tensor of length 4"):
        _graph(y=torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="outside"):
        _graph(y=torch.tensor([0.0, 1.0, 0.5, 1.0]))
    with pytest.raises(TypeError, match="train_mask must be a boolean"):
        _graph(train_mask=torch.tensor([1, 0, 0, 0]))


def test_zero_nodes_raises_and_zero_edges_warns():
    with pytest.raises(ValueError, match="0 nodes"):
        _graph(x=torch.zeros(0, 3), y=torch.zeros(0, dtype=torch.long))
    with pytest.warns(UserWarning, match="0 edges"):
        g = _graph(edge_index=torch.zeros(2, 0, dtype=torch.long))
    assert g.n_edges == 0


def test_directed_input_is_symmetrised_without_loops_or_duplicates():
    g = _graph(edge_index=torch.tensor([[0, 1, 0, 2, 2], [1, 0, 1, 2, 3]]))
    pairs = set(map(tuple, g.edge_index.t().tolist()))
    assert pairs == {(0, 1), (1, 0), (2, 3), (3, 2)}


def test_louvain_gives_exactly_the_requested_number_of_parts():
    clients = make_csbm_federation(n_regions=4, nodes_per_region=60, n_clients=4, seed=1)
    all_x = torch.cat([c.x for c in clients])
    assert all_x.shape[0] == 240
    from icml26.fedssa.data import canonical_edges
    edges = torch.tensor([[i, (i + 1) % 50] for i in range(50)]).t()
    for k in (1, 3, 7):
        parts = louvain_partition(canonical_edges(edges, 50), 50, k, seed=0)
        assert sorted(np.unique(parts)) == list(range(k))


def test_csbm_ground_truth_and_realised_homophily():
    clients = make_csbm_federation(seed=0)
    assert len(clients) == 8
    for c in clients:
        assert c.meta["purity"] > 0.9
        h = c.meta["edge_homophily"]
        assert (h > 0.7) if c.meta["structural_type"] == "homo" else (h < 0.3)
    cells = {(c.meta["structural_type"], c.meta["semantic_type"]) for c in clients}
    assert len(cells) == 4
    train_share = sum(int(c.train_mask.sum()) for c in clients) / sum(c.n_nodes for c in clients)
    assert abs(train_share - 0.1) < 0.01


def test_csbm_is_deterministic_given_seed():
    a = make_csbm_federation(n_regions=4, nodes_per_region=50, n_clients=4, seed=3)
    b = make_csbm_federation(n_regions=4, nodes_per_region=50, n_clients=4, seed=3)
    assert all(torch.equal(x.x, y.x) and torch.equal(x.edge_index, y.edge_index) for x, y in zip(a, b))


def test_csbm_bad_arguments():
    with pytest.raises(ValueError, match="homophily"):
        make_csbm_federation(homophily=(0.8, 1.2))
    with pytest.raises(ValueError, match="partition"):
        make_csbm_federation(partition="spectral")
