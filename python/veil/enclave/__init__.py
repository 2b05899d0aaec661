"""Veil's `enclave` system: exit-based, exitless and Security Service Engine (SSE) enclave
execution on a 64-tile secure multicore (Nye and Khan, IEEE CAL 2022). The model is the Rust
crate `veil-enclave`; see docs/enclave.md."""

from veil.enclave import provenance, server  # noqa: F401  (registrations; the reproducer loads on demand)
