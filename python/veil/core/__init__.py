"""The framework every system plugs into (see docs/architecture.md)."""

from veil.core.config import ComponentName, ExperimentConfig, InputFile
from veil.core.errors import ConfigError, StoreError, VeilError
from veil.core.registry import (REGISTRY, load_systems, register_benchmark, register_cli, register_component,
                                register_components, register_experiment, register_reproducer)
from veil.core.provenance import register_assumption, register_constant
from veil.core.robustness import record_explained, register_headlines
from veil.core.rows import Row, Shape, machine_load, median_spread

__all__ = [
    "REGISTRY",
    "Row",
    "Shape",
    "ComponentName",
    "ConfigError",
    "ExperimentConfig",
    "InputFile",
    "StoreError",
    "VeilError",
    "load_systems",
    "machine_load",
    "median_spread",
    "register_benchmark",
    "register_cli",
    "register_component",
    "register_components",
    "register_assumption",
    "register_constant",
    "register_experiment",
    "record_explained",
    "register_headlines",
    "register_reproducer",
]
