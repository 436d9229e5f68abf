"""A service's prober keeps each check to ``probe_timeout``: ``Prober`` bounds its checks by a timeout of
its own now (5 s unless given), which would have cut a service's checks at 5 s whatever
``RATED_PROBE_TIMEOUT`` said; the service passes its setting, so its ``default_check`` runs as it is."""

from __future__ import annotations

import pytest

from rated import Tool
from rated.encode.testing import HashEncoder
from rated.retriever import Retriever
from rated.service import Settings
from rated.service.probes import start_prober, stop_prober


@pytest.mark.parametrize("timeout", [0.5, 30.0])
def test_the_services_prober_takes_the_probe_timeout(timeout):
    settings = Settings(probe_every=3600, probe_timeout=timeout)
    with Retriever.from_catalog([Tool(id="a", name="a")], encoder=HashEncoder(16)) as r:
        prober = start_prober(settings, lambda: r)
        try:
            assert prober is not None and prober.timeout == timeout
            assert prober.check.timeout == timeout  # its own deadline fits: called as it is, no worker
        finally:
            stop_prober(prober, settings)
