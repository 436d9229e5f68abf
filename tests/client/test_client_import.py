"""Without httpx (the client extra), importing rated.client says which extra to install, in one line."""

from __future__ import annotations

import subprocess
import sys

from rated.extras import install_hint


def test_importing_the_client_without_httpx_names_the_extra():
    code = "import sys; sys.modules['httpx'] = None; import rated.client"  # None: `import httpx` fails
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last == f"ImportError: rated.client needs httpx (the client extra): {install_hint('client')}"
