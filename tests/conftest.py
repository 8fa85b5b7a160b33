import os

# The snapshot recorder needs warcio's HTTP patch in place before urllib3 is first imported.
import warcio.capture_http  # noqa: F401  # isort: skip
import sys
from pathlib import Path

from hypothesis import settings

sys.path.insert(0, str(Path(__file__).parent))

# Property tests are derandomized so that every run (and CI) explores the same examples.
settings.register_profile("default", derandomize=True, deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


import pytest  # noqa: E402

from sgrgym.core.netguard import loopback_only  # noqa: E402


@pytest.fixture(autouse=True)
def _offline():
    """Every test runs under the network guard: a non-loopback connect fails the test."""
    with loopback_only():
        yield
