"""Veil `oram`: PRO-ORAM read-only oblivious storage, a Path ORAM baseline, plain reads."""

from veil.oram import cli, experiments  # noqa: F401  (registrations; the reproducer loads on demand)
