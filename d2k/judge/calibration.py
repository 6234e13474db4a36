"""How often a static verdict of each strength is right, and which verdicts the hybrid judge re-asks.

``d2k judge eval --calibrate`` measures, on the frozen parts (test, and wild once labelled: the
signals were never tuned on them), the precision of the static judge's verdicts per strength and
per strength x verdict (precision = the share equal to the gold label), and writes it to
``judges/static_calibration.json``. The hybrid judge keeps a static verdict only when its bucket's
measured precision is at least ``THRESHOLD`` (0.95); every other verdict (and every undetermined
item) goes to the LLM. A strength x verdict bucket is used when it holds at least ``MIN_N`` rows,
else the strength's overall figure. Without the file the hybrid judge falls back to keeping
strong verdicts and re-asking weak ones.

Dev precision is reported too but never used: the signals were tuned on dev, so it is in-sample
and close to 1 by construction.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

THRESHOLD = 0.95
MIN_N = 20
FILE = "static_calibration.json"


def path(root: Path) -> Path:
    return root / "judges" / FILE


def compute(table: list[dict], parts: list[str], version: str) -> dict:
    """The calibration record from ``agreement.strength_precision`` rows of the given parts."""
    buckets = {f"{r['strength']}/{r['verdict']}": {"n": r["n"], "right": r["right"], "precision": round(r["precision"], 4)}
               for r in table}
    return {"judge": "static", "judge_version": version, "parts": parts, "threshold": THRESHOLD, "min_n": MIN_N,
            "computed_at": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "buckets": buckets}


def write(root: Path, record: dict) -> Path:
    p = path(root)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return p


def load(root: Path | None) -> dict | None:
    if root is None:
        return None
    p = path(root)
    if not p.is_file():
        return None
    try:
        record = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and isinstance(record.get("buckets"), dict) else None


def precision(record: dict | None, strength: str, verdict: str) -> float | None:
    """The measured precision of a static verdict (None when unmeasured)."""
    if not record:
        return None
    buckets = record["buckets"]
    min_n = int(record.get("min_n", MIN_N))
    fine = buckets.get(f"{strength}/{verdict}")
    if fine and fine.get("n", 0) >= min_n:
        return float(fine["precision"])
    coarse = buckets.get(f"{strength}/all")
    if coarse and coarse.get("n", 0) > 0:
        return float(coarse["precision"])
    return None


def keep_static(record: dict | None, strength: str, verdict: str) -> bool:
    """Does the hybrid judge keep this static verdict (rather than ask the LLM)?"""
    if verdict not in ("implemented", "partial", "missing"):
        return False
    p = precision(record, strength, verdict)
    if p is None:
        return strength == "strong"
    return p >= float(record.get("threshold", THRESHOLD))
