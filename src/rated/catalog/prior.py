"""The static reliability prior ``r_static`` (paper-notes 1.2): a per-tool score from metadata only.

``r_static = 0.5 * r_cons + 0.3 * w_src + 0.2 * r_qual``, and a tool is *reliable* when ``r_static >= 0.8``
(judged on ``r_static`` to the 4 decimals a catalog stores, so that a stored row obeys this rule and
``rated catalog stats``, which reads the stored value, counts the tools ``rated catalog build`` flags):

- ``r_cons``: name/description consistency, the cosine of the encoder embeddings of the name (identifiers
  split into words) and of the description, clipped to [0, 1]; 0 when the description is empty;
- ``w_src``: source credibility from ``SOURCE_WEIGHTS`` (1.0 for a tool whose record says it is the
  provider's own, first-party tool, 0.9 LangChain / CrewAI / LlamaIndex, 0.8 n8n, 0.6 otherwise);
- ``r_qual``: documentation quality, ``sigmoid(0.6 * z_desc + 0.4 * z_meta)`` where ``z`` is
  ``(x - median) / std`` over the catalog of the description length (characters) and of the metadata
  richness (number of tags + number of parameters + has an endpoint + has auth information).

The z-scores depend on the catalog they were fitted on. ``compute_prior`` fits them and returns the
medians/stds in ``PriorResult.stats``; tools added later are scored with ``score_new(tools, encoder,
stats)`` so that adding a tool never changes the prior of the others.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from rated.catalog.schema import AuthType, Tool
from rated.catalog.text import split_identifier
from rated.encode.base import Encoder
from rated.errors import CatalogError

__all__ = [
    "DEFAULT_SOURCE_WEIGHT",
    "FIRST_PARTY_WEIGHT",
    "RELIABLE_THRESHOLD",
    "SOURCE_WEIGHTS",
    "WEIGHTS",
    "PriorResult",
    "PriorStats",
    "compute_prior",
    "metadata_richness",
    "score_new",
    "source_weight",
]

#: Source credibility ``w_src`` by ``Tool.source`` (the authors' table). A tool whose ``extra`` has
#: ``"first_party": true`` (published by the provider of the API it calls) gets ``FIRST_PARTY_WEIGHT``.
SOURCE_WEIGHTS: Mapping[str, float] = MappingProxyType(
    {"official": 1.0, "langchain": 0.9, "crewai": 0.9, "llamaindex": 0.9, "n8n": 0.8}
)
FIRST_PARTY_WEIGHT = 1.0
DEFAULT_SOURCE_WEIGHT = 0.6
#: (w_cons, w_src, w_qual) of the linear combination, and the inner weights of r_qual.
WEIGHTS = (0.5, 0.3, 0.2)
QUAL_WEIGHTS = (0.6, 0.4)
RELIABLE_THRESHOLD = 0.8
_STORED_DECIMALS = 4


@dataclass(frozen=True)
class PriorStats:
    """Medians and standard deviations the z-scores were fitted with (kept so new tools score alike)."""

    desc_median: float
    desc_std: float
    meta_median: float
    meta_std: float

    def to_dict(self) -> dict[str, float]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PriorStats:
        return cls(**{k: float(data[k]) for k in ("desc_median", "desc_std", "meta_median", "meta_std")})


@dataclass(frozen=True)
class PriorResult:
    """Per-tool prior components, aligned with ``tool_ids`` (float32 arrays, ``reliable`` bool)."""

    tool_ids: tuple[str, ...]
    r_cons: np.ndarray
    w_src: np.ndarray
    r_qual: np.ndarray
    r_static: np.ndarray
    reliable: np.ndarray
    stats: PriorStats

    def __len__(self) -> int:
        return len(self.tool_ids)

    def record(self, i: int) -> dict[str, Any]:
        """The components of tool ``i`` as plain floats (for JSON and ``Tool.extra``)."""
        return {
            "r_static": _stored(self.r_static[i]),
            "r_cons": _stored(self.r_cons[i]),
            "w_src": _stored(self.w_src[i]),
            "r_qual": _stored(self.r_qual[i]),
            "reliable": bool(self.reliable[i]),
        }


def compute_prior(
    tools: Sequence[Tool],
    encoder: Encoder,
    *,
    stats: PriorStats | None = None,
    batch_size: int = 64,
    progress: bool = False,
) -> PriorResult:
    """Score every tool in one batch. Without ``stats`` the z-score statistics are fitted on ``tools``."""
    if not tools:
        if stats is None:
            raise CatalogError("cannot fit the reliability prior on an empty catalog")
        empty = np.zeros(0, dtype=np.float32)
        return PriorResult((), empty, empty, empty, empty, np.zeros(0, dtype=bool), stats)
    desc_len = np.array([len(t.description.strip()) for t in tools], dtype=np.float64)
    richness = np.array([metadata_richness(t) for t in tools], dtype=np.float64)
    if stats is None:
        stats = PriorStats(
            desc_median=float(np.median(desc_len)),
            desc_std=float(desc_len.std()),
            meta_median=float(np.median(richness)),
            meta_std=float(richness.std()),
        )
    z_desc = _z(desc_len, stats.desc_median, stats.desc_std)
    z_meta = _z(richness, stats.meta_median, stats.meta_std)
    # clipped: a tool scored with stats fitted elsewhere (score_new) can sit thousands of stds away
    logit = np.clip(QUAL_WEIGHTS[0] * z_desc + QUAL_WEIGHTS[1] * z_meta, -50.0, 50.0)
    r_qual = 1.0 / (1.0 + np.exp(-logit))
    r_cons = _consistency(tools, encoder, batch_size=batch_size, progress=progress)
    w_src = np.array([source_weight(t) for t in tools], dtype=np.float64)
    r_static = WEIGHTS[0] * r_cons + WEIGHTS[1] * w_src + WEIGHTS[2] * r_qual
    r_static = np.clip(r_static, 0.0, 1.0).astype(np.float32)
    return PriorResult(
        tool_ids=tuple(t.id for t in tools),
        r_cons=r_cons.astype(np.float32),
        w_src=w_src.astype(np.float32),
        r_qual=r_qual.astype(np.float32),
        r_static=r_static,
        reliable=np.array([_stored(v) >= RELIABLE_THRESHOLD for v in r_static], dtype=bool),
        stats=stats,
    )


def score_new(tools: Sequence[Tool], encoder: Encoder, stats: PriorStats, **kwargs: Any) -> PriorResult:
    """Score tools added after the catalog was fitted, with the catalog's stored statistics."""
    return compute_prior(tools, encoder, stats=stats, **kwargs)


def source_weight(tool: Tool) -> float:
    """``w_src`` for one tool (see ``SOURCE_WEIGHTS``)."""
    if tool.extra.get("first_party") is True:
        return FIRST_PARTY_WEIGHT
    return SOURCE_WEIGHTS.get(tool.source.lower(), DEFAULT_SOURCE_WEIGHT)


def metadata_richness(tool: Tool) -> int:
    """Tags + parameters + has an endpoint + has auth information (the ``z_meta`` input)."""
    props = tool.parameters.get("properties") if isinstance(tool.parameters, dict) else None
    n_params = len(props) if isinstance(props, dict) else 0
    has_endpoint = int(bool(tool.endpoint and tool.endpoint.strip()))
    has_auth = int(tool.auth.type != AuthType.UNKNOWN)
    return len(tool.tags) + n_params + has_endpoint + has_auth


def _consistency(tools: Sequence[Tool], encoder: Encoder, *, batch_size: int, progress: bool) -> np.ndarray:
    names = [split_identifier(t.name) or t.name for t in tools]
    descs = [" ".join(t.description.split()) for t in tools]
    unique = sorted({*names, *(d for d in descs if d)})
    position = {text: i for i, text in enumerate(unique)}
    emb = np.asarray(encoder.encode_tools(unique, batch_size=batch_size, progress=progress), dtype=np.float32)
    norms = np.linalg.norm(emb, axis=1, keepdims=True)
    unit = emb / np.where(norms > 0, norms, 1.0)  # cosine even from an encoder that forgot to normalise
    out = np.zeros(len(tools), dtype=np.float64)
    for i, (name, desc) in enumerate(zip(names, descs, strict=True)):
        if desc:
            out[i] = float(unit[position[name]] @ unit[position[desc]])
    # a plugged-in encoder may return NaN/inf for some text (e.g. mean pooling over zero tokens): no
    # evidence of consistency, not a NaN that would poison the fused ranking score
    return np.clip(np.nan_to_num(out, nan=0.0, posinf=0.0, neginf=0.0), 0.0, 1.0)


def _stored(value: float | np.floating[Any]) -> float:
    """A prior component as a catalog row stores it (and as the reliable flag is judged)."""
    return round(float(value), _STORED_DECIMALS)


def _z(x: np.ndarray, median: float, std: float) -> np.ndarray:
    if not np.isfinite(std) or std <= 1e-12:
        return np.zeros_like(x)
    return (x - median) / std
