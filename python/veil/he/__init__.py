"""he: CHOCO client-aided homomorphic DNN inference on Microsoft SEAL (BFV batching) with
rotational redundancy, parameter search and client cost models."""

from veil.he import experiments, provenance, reproduce  # noqa: F401  (registrations)
from veil.he.taco import experiment as _taco  # noqa: F401  (registrations)
