"""The settings saved beside a catalog, so that ``Retriever.open`` rebuilds exactly what was indexed.

Stored as one JSON object in the store's meta table. It names the encoder (embeddings from another encoder
are not comparable: ``open`` checks the identity), the policy and its parameters, the semantic-stage
configuration, the retrieval limits, the prior's fitted statistics (so tools added later score alike) and
the rule for retired endpoints (``rated.retired``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from rated.errors import IndexFormatError

__all__ = ["EncoderIdentity", "IndexMeta"]


@dataclass(frozen=True)
class EncoderIdentity:
    """What makes two encoders' embeddings comparable: name, size and (for real models) a weights hash."""

    name: str
    dim: int
    fingerprint: str = ""
    model_dir: str | None = None  # where an ONNX model was loaded from, to reload a fine-tuned one

    @classmethod
    def of(cls, encoder: Any) -> EncoderIdentity:
        model_dir = getattr(encoder, "model_dir", None)
        return cls(
            name=str(encoder.name),
            dim=int(encoder.dim),
            fingerprint=str(getattr(encoder, "fingerprint", "") or ""),
            model_dir=str(model_dir) if model_dir else None,
        )

    def same_embeddings(self, other: EncoderIdentity) -> bool:
        return (self.name, self.dim, self.fingerprint) == (other.name, other.dim, other.fingerprint)

    def __str__(self) -> str:
        fp = f", weights {self.fingerprint}" if self.fingerprint else ""
        return f"{self.name} (dim {self.dim}{fp})"


@dataclass(frozen=True)
class IndexMeta:
    encoder: EncoderIdentity
    policy: str
    policy_params: dict[str, Any] = field(default_factory=dict)
    semantic: dict[str, Any] = field(default_factory=dict)
    candidates: int = 10
    max_query_chars: int = 10_000
    prior_stats: dict[str, float] = field(default_factory=dict)
    rated_version: str = ""
    retired: dict[str, Any] = field(default_factory=dict)  # rated.retired.RetiredRule's fields; {}: defaults

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "store") -> IndexMeta:
        try:
            return cls(
                encoder=EncoderIdentity(**data["encoder"]),
                policy=str(data["policy"]),
                policy_params=dict(data.get("policy_params", {})),
                semantic=dict(data.get("semantic", {})),
                candidates=int(data.get("candidates", 10)),
                max_query_chars=int(data.get("max_query_chars", 10_000)),
                prior_stats=dict(data.get("prior_stats", {})),
                rated_version=str(data.get("rated_version", "")),
                # null (a hand edit, another writer) is no rule of its own: the defaults, like a missing key
                retired=dict({} if data.get("retired") is None else data["retired"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise IndexFormatError(
                f"{where}: the saved index settings are incomplete or damaged ({exc})"
            ) from None
