"""memnet: a cycle-level simulator for memory-centric networks (BookSim2-compatible IQ router).

The simulator is the Rust crate `veil-memnet`; this package registers its components, the
`memnet.latency_load` experiment and the reproducer.
"""

from . import cli, engine, experiments, leak, memsys, reproduce  # noqa: F401
