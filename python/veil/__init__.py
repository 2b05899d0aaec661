"""Veil: functional and performance models of systems that protect offloaded computation."""

from veil._native import __version__

__all__ = ["__version__"]
