"""One torch / BLAS thread for this package's tests (session-wide, so module-scoped fixtures
run under it too): the problems are tiny and the machine is shared."""

import pytest
import torch
from threadpoolctl import threadpool_limits


@pytest.fixture(autouse=True, scope="session")
def _one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    with threadpool_limits(1):
        yield
    torch.set_num_threads(before)
