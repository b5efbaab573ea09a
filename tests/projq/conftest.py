"""ProjQ's tests run single-threaded: small matrices are fastest on one thread, and the shared
machine is not oversubscribed."""

import pytest
import torch


@pytest.fixture(autouse=True)
def _one_torch_thread():
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)
