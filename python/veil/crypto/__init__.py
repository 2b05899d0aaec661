"""Veil's crypto engines (crate `veil-crypto`): throughput limits and pad statistics.

Not one of the five papers: the physical limits later systems compare against.
"""

from veil.crypto import engines, randomness, throughput  # noqa: F401  (registrations; the reproducer loads on demand)
