"""memnet: a cycle-level simulator for memory-centric networks (BookSim2-compatible IQ router).

The simulator is the Rust crate `veil-memnet`; this package registers its components, the
`memnet.latency_load` experiment and the reproducer.
"""

from . import engine  # noqa: F401  (framework-free layer)

try:
    from veil.core import register_experiment as _probe  # noqa: F401
except ImportError:  # the framework is not available: the engine alone still works
    pass
else:
    from . import experiments, reproduce  # noqa: F401
