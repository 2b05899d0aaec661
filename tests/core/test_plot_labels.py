"""An axis label fits its figure: a long key description wraps instead of running off the edge."""
from veil.core.plot import _label, _wrap


def test_a_long_description_wraps_into_at_most_two_lines_that_fit():
    text = "rate: " + "offered load, flits/node/cycle (bernoulli; a node injects at most one flit per cycle) " * 3
    lines = _wrap(text).split("\n")
    assert len(lines) == 2 and all(len(line) <= 72 for line in lines)
    assert lines[-1].endswith("...")
    assert _wrap("short label") == "short label"


def test_the_latency_load_rate_label_is_the_whole_description_wrapped():
    from veil.core.registry import REGISTRY, load_systems

    load_systems()
    description = REGISTRY.experiments["memnet.latency_load"].config.model_fields["rate"].description
    label = _label("memnet.latency_load", "rate")
    assert len(description) > 72  # long enough to have been clipped by the figure's edge
    assert all(len(line) <= 72 for line in label.split("\n"))
    assert " ".join(label.split()) == " ".join(f"rate: {description}".split())  # every word, none cut
