"""Veil's `memcrypt` system: encrypted and authenticated memory with frequent-value ciphertext and
MAC speculation (Shi, Lee et al., CF 2007), functional (real ciphers on traced lines) and as an
interval timing model. The models are the Rust crate `veil-memcrypt`; see docs/memcrypt.md."""

from veil.memcrypt import provenance, sim  # noqa: F401  (registrations; the reproducer loads on demand)
