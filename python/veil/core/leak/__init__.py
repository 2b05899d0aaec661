"""The adversary's statistics, shared by every system's observer: time-aligned two-sample tests
(aligned), power measured by planting effects of known size (power), and the classifier,
multiplicity and interval helpers (stats). Plain arrays only: nothing here imports a simulator.
Imported only where a statistical test runs (it pulls in scipy)."""
