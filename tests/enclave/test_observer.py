"""The untrusted OS's view of the enclave models (python/veil/enclave/observer.py): what it
records, EX-B as the negative control, and what the exitless models do and do not hide."""

from __future__ import annotations

import pytest

from veil.core.errors import ConfigError
from veil.core.leak.observer import observer
from veil.enclave import observer as eo

ALPHA = 1e-3


def test_registered_and_bad_pairs_are_one_line():
    assert observer("enclave", "os") is eo.OBSERVER and eo.OBSERVER.leaky == ("ex-b",)
    with pytest.raises(ConfigError, match="more than one secret"):
        eo.OBSERVER.check("ex-l", "small-pages", "branch-long")
    with pytest.raises(ConfigError, match="known: ex-b"):
        eo.OBSERVER.check("bl", "small-pages", "large-pages")


def test_the_os_view_holds_only_what_the_os_handles():
    view = eo.os_view("ex-l", "large-pages", 1, 3)
    assert len(view) == 3
    assert all(set(w) == set(eo.VOLUME + eo.TEMPORAL) for w in view)
    # A branch inside the enclave moves no call and no byte the OS handles (under EX-B, whose
    # exits are the calls): only time tells.
    a, b = eo.os_view("ex-b", "branch-short", 2, 5), eo.os_view("ex-b", "branch-long", 2, 5)
    assert [[w[f] for f in eo.VOLUME] for w in a] == [[w[f] for f in eo.VOLUME] for w in b]
    assert sum(w["cycles"] for w in b) > sum(w["cycles"] for w in a)
    # Exitless models make no exits; EX-B makes two per call.
    assert all(w["exits"] == 0 for w in view)
    assert all(w["exits"] == 2 * w["syscalls"] for w in a)
    assert eo.window_configs("sse", "small-pages", 4, 3) == eo.window_configs("sse", "small-pages", 4, 3)


def test_exit_based_negative_control_leaks_the_call_pattern_and_page_size():
    """A secret-dependent call pattern (cache hits make 4 calls, misses 10) is seen in the exits
    themselves; the page size in the call sizes and the time."""
    hit, miss = eo.os_view("ex-b", "cache-hit", 1, 2), eo.os_view("ex-b", "cache-miss", 1, 2)
    assert [w["exits"] for w in hit] == [2 * 4 * eo.REQUESTS] * 2
    assert [w["exits"] for w in miss] == [2 * 10 * eo.REQUESTS] * 2
    p = eo.measure("ex-b", "cache-miss", "cache-hit", size=8)
    assert p["volume"] < ALPHA and p["temporal"] < ALPHA
    p = eo.measure("ex-b", "small-pages", "large-pages", size=8)
    assert p["volume"] < ALPHA and p["temporal"] < ALPHA


@pytest.mark.parametrize("setting", ["ex-l", "sse"])
def test_exitless_models_hide_exits_not_calls_or_time(setting):
    """Responders carry the calls to the same OS: the call pattern, the page size (call sizes)
    and a secret branch (time; under EX-L also the responder wake-ups) are still seen."""
    assert eo.measure(setting, "cache-miss", "cache-hit", size=8)["volume"] < ALPHA
    assert max(eo.measure(setting, "small-pages", "large-pages", size=8).values()) < ALPHA
    assert eo.measure(setting, "branch-short", "branch-long", size=8)["temporal"] < ALPHA


@pytest.mark.parametrize("setting", ["ex-b", "ex-l", "sse"])
def test_same_secret_is_not_flagged(setting):
    assert min(eo.measure(setting, "small-pages", "small-pages-b", size=8).values()) > ALPHA
