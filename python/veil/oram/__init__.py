"""Veil `oram`: PRO-ORAM read-only oblivious storage, a Path ORAM baseline, plain reads."""

from veil.oram import cli, experiments, reproduce  # noqa: F401  (registrations)
