"""Which calls are scored: Mastra's sampling (``runScorer`` in ``src/evals/hooks.ts``).

A ratio sample scores a call when ``sha256(trace id or run id)``, its first 6 bytes read as a
big-endian integer over 2^48, is below the rate: the same ids are sampled as in Mastra, in every
process, without coordination.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from evaldag.errors import EvalDagError

try:  # CPython's own sha256: hashlib's goes through an OpenSSL digest context, made per call,
    from _sha2 import sha256  # which costs 10-20 µs on caches a 0.5 ms wait left cold
except ImportError:  # Python before 3.12
    try:
        from _sha256 import sha256
    except ImportError:  # a build without it
        from hashlib import sha256

_SCALE = float(2**48)


class NoSampling(BaseModel):
    """Score every call."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: Literal["none"] = "none"


class RatioSampling(BaseModel):
    """Score the calls whose id hashes below ``rate``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: Literal["ratio"] = "ratio"
    rate: float = Field(ge=0, le=1, description="The share of calls scored, in [0, 1].")


Sampling = Annotated[NoSampling | RatioSampling, Field(discriminator="type")]
_SAMPLING = TypeAdapter(Sampling)


def unit_interval(key: str) -> float:
    """Mastra's ``hashToUnitInterval``: ``key`` mapped to [0, 1) by its sha256."""
    digest = sha256(key.encode()).digest()
    return int.from_bytes(digest[:6], "big") / _SCALE


def sampling_bound(rate: float | None) -> bytes | None:
    """The sha256 digests of the ids a ``rate`` samples are those below this bound (None: every
    id is sampled): ``unit_interval(key) < rate`` without the arithmetic, since a digest is
    below it exactly when its first 6 bytes, read as an integer, are below ``rate`` × 2^48."""
    if rate is None or rate >= 1:
        return None
    return math.ceil(rate * _SCALE).to_bytes(6, "big")


def sampling_rate(sampling: Any) -> float | None:
    """The ratio of a sampling option, or None to score every call.

    :param sampling: None or ``{"type": "none"}`` (every call), ``{"type": "ratio", "rate": r}``
        or the rate alone (a number).
    """
    if sampling is None:
        return None
    if isinstance(sampling, int | float) and not isinstance(sampling, bool):
        sampling = {"type": "ratio", "rate": sampling}
    try:
        parsed = _SAMPLING.validate_python(sampling)
    except ValidationError as error:
        raise EvalDagError(
            "EVALDAG_LIVE_INVALID_SAMPLING",
            f"sampling={sampling!r} is not a sampling: give a rate in [0, 1], "
            "{'type': 'ratio', 'rate': r} or {'type': 'none'} "
            f"({error.errors()[0]['msg']})",
            details={"sampling": repr(sampling)},
        ) from error
    return parsed.rate if isinstance(parsed, RatioSampling) else None
