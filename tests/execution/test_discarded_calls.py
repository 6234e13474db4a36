"""The trusted side accepts timed calls left out of samples_ms only as the profiler check leaves
them: span mode, a profiled median over the slack (profiler_slowed), at most span_max_reps calls."""

import pytest

from d2k.execution.worker import CheckFailed, discarded_calls

SPAN = {"device_span": True, "span_max_reps": 300, "profiler_slack": 1.25}


def test_none_discarded_needs_nothing():
    assert discarded_calls({"samples_ms": [1.0]}, {}) == 0
    assert discarded_calls({"discarded_calls": 0, "profiler_slowed": None}, SPAN) == 0


def test_the_profiler_checks_discard_is_accepted():
    assert discarded_calls({"discarded_calls": 300, "profiler_slowed": 2.2}, SPAN) == 300
    assert discarded_calls({"discarded_calls": 12, "profiler_slowed": 1.25}, SPAN) == 12


@pytest.mark.parametrize("timing, settings", [
    ({"discarded_calls": 40}, SPAN),                                           # no profiler_slowed at all
    ({"discarded_calls": 40, "profiler_slowed": None}, SPAN),
    ({"discarded_calls": 40, "profiler_slowed": 1.1}, SPAN),                   # under the slack
    ({"discarded_calls": 40, "profiler_slowed": True}, SPAN),                  # a bool is not a ratio
    ({"discarded_calls": 40, "profiler_slowed": "2.0"}, SPAN),
    ({"discarded_calls": 301, "profiler_slowed": 2.0}, SPAN),                  # more than one profiled run
    ({"discarded_calls": 40, "profiler_slowed": 2.0}, {**SPAN, "device_span": False}),  # events mode profiles nothing
    ({"discarded_calls": "many"}, SPAN),
])
def test_any_other_discard_fails_the_check(timing, settings):
    with pytest.raises(CheckFailed, match="timing loop was replaced"):
        discarded_calls(timing, settings)


def test_the_probe_is_always_checked_and_the_timed_calls_are_a_uniform_sample_of_three():
    import random
    from collections import Counter

    from d2k.execution.worker import CheckedCalls

    picked = Counter()
    for seed in range(3000):
        sample = CheckedCalls(random.Random(seed), always=[0])
        kept: set[int] = set()
        for call in range(13):
            keep, dropped = sample.decide(call)
            kept.discard(dropped)
            if keep:
                kept.add(call)
        assert 0 in kept and sorted(kept) == sample.calls and len(kept) == 4
        picked.update(kept - {0})
    # each of the 12 timed calls is checked with probability 3/12 (750 of 3000 runs; 4 sigma = 95)
    assert all(abs(picked[call] - 750) < 95 for call in range(1, 13)), picked
