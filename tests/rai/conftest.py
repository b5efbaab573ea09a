import pytest
import torch


@pytest.fixture(autouse=True, scope="session")
def _one_thread():
    """Small models run fastest (and least disturbed by a loaded machine) on one thread."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)
