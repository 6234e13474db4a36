"""What a GPU figure holds besides the solution's kernels, in words for the run's log.

A stored record already says it in its columns (`timing.waits_for_device`, `flags.host_late`,
`span_median_ms` beside `kernel_sum_median_ms`), but a kernel author reading `passed 3.636 ms`
does not see that 0.5 ms of it is the GPU idle while the host runs the call's Python. These notes
say so after a run, one line per evaluation, only for passed GPU records.
"""

from __future__ import annotations

import math

# the span outside the kernels is worth a note above this share of the span and this many ms.
# Kernel start-up between back-to-back launches is ~1 us a kernel, so a call of a dozen or more
# short kernels can cross both with no idle host at all: the note says what the gap may be.
OUTSIDE_SHARE = 0.05
OUTSIDE_FLOOR_MS = 0.010


def _number(value) -> float | None:
    """A finite float from a JSON number, else None (the timing fields come from the candidate's
    process: a huge integer or a non-number must not break the run's log)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def timing_notes(record: dict) -> list[str]:
    """The notes for one evaluation record (as `supervisor` builds it, or a row of `evaluations`
    with its JSON columns decoded); empty when its figure is the kernels' alone."""
    if record.get("backend") != "cuda" or record.get("status") != "passed":
        return []
    timing = record.get("timing") if isinstance(record.get("timing"), dict) else {}
    flags = record.get("flags") if isinstance(record.get("flags"), dict) else {}
    notes = []
    if timing.get("profiler_slowed"):
        # the profiler's CPU-side cost showed in the call: its host work bounds it (timing.py)
        notes.append(f"the profiler slowed the call {_number(timing['profiler_slowed']) or 0:.2f}x (its host work "
                     f"bounds it): timed by events without the profiler, host work included")
    elif timing.get("waits_for_device"):
        notes.append("the call waits for the device mid-call (a host read of a device value, such as "
                     ".tolist() or .item()): timed by events, so its figure includes the host's work after the read")
    late = flags.get("host_late") if isinstance(flags.get("host_late"), dict) else None
    calls = _number(late.get("calls")) if late else None
    if calls:
        hold, worst = _number(timing.get("hold_us")), _number(late.get("worst_us"))
        of = _number(late.get("of"))
        notes.append(f"{calls:.0f}{f' of {of:.0f}' if of else ''} timed calls were issued more slowly than "
                     f"the {f'{hold:.0f}-us ' if hold else ''}stream hold"
                     f"{f' (worst {worst:.0f} us late)' if worst is not None else ''}: "
                     f"their event windows may include host time")
    span, kernels = _number(record.get("span_median_ms")), _number(record.get("kernel_sum_median_ms"))
    if span and kernels is not None and span - kernels > max(OUTSIDE_SHARE * span, OUTSIDE_FLOOR_MS):
        outside = span - kernels
        notes.append(f"{outside * 1e3:.0f} us of its {span * 1e3:.0f}-us device span ({outside / span:.0%}) is "
                     f"outside its kernels: copies, sets, kernel start-ups (~1 us each) or the GPU idle between "
                     f"launches (a host-bound or synchronising call); the span counts it")
    return notes
