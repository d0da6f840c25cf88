"""Confidence intervals of means: the one seeded bootstrap every interval of a result comes from.

A percentile bootstrap: the values are resampled with replacement ``resamples`` times, and the
interval holds the middle ``level`` of the resampled means. The generator is seeded, so the same
values give the same interval on every machine. Averages of scores and paired per-item deltas
(``evaldag compare``) both use it; agreement figures (``evaldag.agreement``) are recomputed on
the same kind of resamples (``resampled_positions``) and take the same percentiles.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from evaldag._scorer.thresholds import ThresholdSpec, figure_text

#: Resamples of an interval, and the seed of its generator.
RESAMPLES = 10_000
SEED = 0
LEVEL = 0.95
#: Resampled values per interval at most (resamples × values): a run of 20,000 items with
#: scores of many distinct values gets fewer resamples rather than seconds per scorer.
_MAX_DRAWS = 20_000_000
#: Resampled means beyond each end of an interval at least (see ``minimum_resamples``).
TAIL_RESAMPLES = 25


class ConfidenceInterval(BaseModel):
    """A percentile-bootstrap interval of a mean."""

    model_config = ConfigDict(frozen=True)

    low: float
    high: float
    level: float = Field(default=LEVEL, description="The share of resampled means it holds.")
    resamples: int = RESAMPLES
    seed: int = SEED

    def excludes(self, value: float) -> bool:
        """Whether ``value`` lies outside the interval."""
        return value < self.low or value > self.high

    def text(self, against: ThresholdSpec | None = None) -> str:
        """``[0.71, 0.93]``; each end on its side of each bound of ``against`` (the threshold
        the interval is shown beside), as ``figure_text`` shows it."""
        return f"[{figure_text(self.low, against)}, {figure_text(self.high, against)}]"

    def __str__(self) -> str:
        return self.text()


def minimum_resamples(level: float) -> int:
    """The fewest resamples that give an interval of ``level``: ``TAIL_RESAMPLES`` (25) beyond
    each end, so 1,000 at 95 % (Efron and Tibshirani's figure for percentile intervals), 5,000 at
    99 %. An end is a percentile of the resampled means; with fewer in the tail it is one or two
    extreme resamples, which another seed moves a lot, and below ``1 / tail`` resamples there is
    no tail at all (one resample gives an "interval" of a single mean)."""
    return math.ceil(round(TAIL_RESAMPLES / ((1 - level) / 2), 6))


def bootstrap_interval(
    values: Sequence[float] | np.ndarray,
    *,
    level: float = LEVEL,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> ConfidenceInterval | None:
    """The interval of the mean of ``values``; None for fewer than two values."""
    data = np.asarray(values, dtype=float)
    count = len(data)
    if count < 2:
        return None
    resamples = min(resamples, max(minimum_resamples(level), _MAX_DRAWS // count))
    generator = np.random.default_rng(seed)
    distinct, counts = np.unique(data, return_counts=True)
    if len(distinct) * 16 <= count:
        # Few distinct scores (checks, judged shares): a resample's mean depends only on how
        # often each value is drawn, a multinomial draw; the same distribution, far fewer draws.
        drawn = generator.multinomial(count, counts / count, size=resamples)
        means = drawn @ distinct / count
    else:
        chunk = max(1, 10_000_000 // count)
        sizes = [min(chunk, resamples - start) for start in range(0, resamples, chunk)]
        means = np.concatenate(
            [data[generator.integers(0, count, size=(size, count))].mean(axis=1) for size in sizes]
        )
    return percentile_interval(means, level=level, seed=seed)


def resampled_positions(count: int, *, resamples: int = RESAMPLES, seed: int = SEED) -> np.ndarray:
    """The positions of ``count`` items in each of ``resamples`` resamples (one row each), drawn
    with replacement by the seeded generator, for a statistic recomputed on every resample."""
    return np.random.default_rng(seed).integers(0, count, size=(resamples, count))


def percentile_interval(
    replicates: np.ndarray, *, level: float = LEVEL, seed: int = SEED
) -> ConfidenceInterval | None:
    """The middle ``level`` of a statistic's bootstrap replicates; replicates a resample could
    not define (NaN) are left out, and None when none is defined."""
    defined = replicates[np.isfinite(replicates)]
    if not len(defined):
        return None
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(defined, [tail, 100 - tail])
    return ConfidenceInterval(
        low=float(low), high=float(high), level=level, resamples=len(replicates), seed=seed
    )


def cluster_bootstrap_interval(
    sums: Sequence[float] | np.ndarray,
    counts: Sequence[int] | np.ndarray,
    *,
    level: float = LEVEL,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> ConfidenceInterval | None:
    """The interval of the mean of values that come in clusters (an item's trials), each given
    by its ``sums`` and ``counts``: the clusters are resampled, not the values, as values of one
    cluster are not independent; None for fewer than two clusters."""
    totals, sizes = np.asarray(sums, dtype=float), np.asarray(counts, dtype=float)
    clusters = len(totals)
    if clusters < 2:
        return None
    resamples = min(resamples, max(minimum_resamples(level), _MAX_DRAWS // clusters))
    generator = np.random.default_rng(seed)
    chunk = max(1, 10_000_000 // clusters)
    means = []
    for start in range(0, resamples, chunk):
        drawn = generator.integers(0, clusters, size=(min(chunk, resamples - start), clusters))
        means.append(totals[drawn].sum(axis=1) / sizes[drawn].sum(axis=1))
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(np.concatenate(means), [tail, 100 - tail])
    return ConfidenceInterval(
        low=float(low), high=float(high), level=level, resamples=resamples, seed=seed
    )
