import pytest

from icml26.core.example import EXPERIMENT
from icml26.core.experiment import register


@pytest.fixture
def example():
    """The worked example experiment, registered for the duration of a test."""
    from icml26.core import experiment as registry_module

    register(EXPERIMENT)
    yield EXPERIMENT
    registry_module._REGISTRY.pop(EXPERIMENT.slug, None)
