"""The framework every system plugs into (see docs/architecture.md)."""

from veil.core.config import ComponentName, ExperimentConfig, InputFile
from veil.core.errors import ConfigError, StoreError, VeilError
from veil.core.registry import (REGISTRY, load_systems, register_benchmark, register_cli, register_component,
                                register_experiment, register_reproducer)

__all__ = [
    "REGISTRY",
    "ComponentName",
    "ConfigError",
    "ExperimentConfig",
    "InputFile",
    "StoreError",
    "VeilError",
    "load_systems",
    "register_benchmark",
    "register_cli",
    "register_component",
    "register_experiment",
    "register_reproducer",
]
