"""memnet: a cycle-level simulator for memory-centric networks (BookSim2-compatible IQ router).

The simulator is the Rust crate `veil-memnet`; this package registers its components, the
`memnet.latency_load` experiment; its reproducer (reproduce.py) loads when a report is made.
"""

from veil.core.registry import declare_experiment

from . import cli, engine, experiments, memsys, provenance  # noqa: F401  (the reproducer loads on demand)

# The adversary's module pulls in numpy and the statistics: imported when memnet.leak is run.
declare_experiment("memnet.leak", "veil.memnet.leak")
