"""he: CHOCO client-aided homomorphic DNN inference on Microsoft SEAL (BFV batching) with
rotational redundancy, parameter search and client cost models."""

from veil.he import experiments, provenance  # noqa: F401  (registrations; the reproducer loads on demand)
from veil.he.taco import experiment as _taco  # noqa: F401  (registrations)
