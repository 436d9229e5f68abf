"""A client of rated's HTTP service (``rated serve``) with the ``Retriever`` API, for agents in other
processes: ``RatedClient`` (sync) and ``AsyncRatedClient`` (asyncio), on httpx (the ``client`` extra).

Hits come back as ``rated.Hit`` objects, definitions as ``rated.ToolDefinitions``, a tracked call is
reported once and classified exactly as ``Retriever.track`` does it (``rated.tracking``), and the
service's errors are raised as rated's own classes (``rated.client.errors``).
"""

try:
    import httpx  # noqa: F401
except ImportError as exc:  # one line naming the extra, not a ModuleNotFoundError from deep inside
    from rated.extras import install_hint

    raise ImportError(f"rated.client needs httpx (the client extra): {install_hint('client')}") from exc

from rated.client.aio import AsyncRatedClient
from rated.client.errors import ServiceAuthError, ServiceError, ServiceUnreachableError
from rated.client.sync import RatedClient
from rated.client.wire import FeedbackResult, ServiceHealth

__all__ = [
    "AsyncRatedClient",
    "FeedbackResult",
    "RatedClient",
    "ServiceAuthError",
    "ServiceError",
    "ServiceHealth",
    "ServiceUnreachableError",
]
