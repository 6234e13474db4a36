"""Statistics of a timed run, computed by the trusted parent from the raw per-call samples."""

from __future__ import annotations

import numpy as np


def timing_stats(samples: list[float]) -> dict:
    """Median, quartiles and spread of the per-call samples (milliseconds)."""
    if not samples:
        return {}
    a = np.asarray(samples, dtype=np.float64)
    q1, median, q3 = np.percentile(a, [25, 50, 75])
    mean = float(a.mean())
    std = float(a.std(ddof=1)) if a.size > 1 else 0.0
    return {
        "median_ms": float(median), "q1_ms": float(q1), "q3_ms": float(q3), "iqr_ms": float(q3 - q1),
        "mean_ms": mean, "std_ms": std, "min_ms": float(a.min()), "max_ms": float(a.max()), "n_samples": int(a.size),
    }
