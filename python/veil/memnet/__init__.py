"""memnet: a cycle-level simulator for memory-centric networks (BookSim2-compatible IQ router).

The simulator is the Rust crate `veil-memnet`; this package registers its components, the
`memnet.latency_load` experiment; its reproducer (reproduce.py) loads when a report is made.
"""

from . import cli, engine, experiments, leak, memsys  # noqa: F401  (the reproducer loads on demand)
