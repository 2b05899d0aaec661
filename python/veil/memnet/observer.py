"""memnet's channel-watching adversary as a `veil leak` observer (docs/leak.md, "memnet").

The attacker of the paper watches every link of the memory network: which channel each packet
crosses, from which CPU toward which next destination, when, and how large (packets are
encrypted and padded: no address, no data). It is the same recording as `veil memnet leak`
(leak/observe.py); here it is cut into windows of WINDOW cycles and handed over as the shared
feature families. `minimal` routing sends every packet straight to its module: the negative
control, which must leak.
"""

from __future__ import annotations

import numpy as np

from veil.core import ConfigError

__all__ = ["WINDOW", "PATTERNS", "BASE", "memsys_fields", "run", "OBSERVER"]

WINDOW = 500  # cycles
#: A small public system the quick report can afford: 4 CPUs, pads sealed by the source.
BASE = {"cpus": 4, "encryption": "source_otp"}
PATTERNS = {
    "uniform": {"workload": "uniform"},
    "hotspot": {"workload": "hotspot", "hot_modules": [0, 1, 2, 3], "hotspot_fraction": 0.5},
    "hotspot_far": {"workload": "hotspot", "hot_modules": [8, 9, 10, 11], "hotspot_fraction": 0.5},
}
PATTERN_DOC = {
    "uniform": "every miss to a module drawn uniformly",
    "hotspot": "half the misses to modules 0-3",
    "hotspot_far": "half the misses to modules 8-11",
}
VOLUME = ("packets", "flits", "traversals")
TIMING = ("gap_mean", "gap_cv")


def memsys_fields(setting: str, pattern: str, seed: int, size: int) -> dict:
    if pattern not in PATTERNS:
        raise ConfigError(f"pattern: unknown {pattern!r}; known: {', '.join(PATTERNS)}")
    return {**BASE, **PATTERNS[pattern], "requests_per_cpu": int(size), "injection": setting, "seed": int(seed)}


def run(setting: str, pattern: str, seed: int, size: int):
    from veil.core.leak.observer import Run

    from .leak.observe import observe, windows
    from .memsys import MemSysConfig, to_rust_config

    rc = to_rust_config(MemSysConfig.model_validate(memsys_fields(setting, pattern, seed, size)))
    o = observe(rc)
    w = windows(o, WINDOW)
    cpus = np.asarray(o.cpu_nodes)
    # Where, by count: blocks of PACKETS consecutive CPU packets, so that a secret changing only
    # the program's rate is not read as where (leak/observe.py).
    dest = w.dest_seq.sum(axis=1).astype(float)
    volume = np.column_stack([w.scalars[k] for k in VOLUME] + [w.per_source[:, cpus]]).astype(float)
    timing = np.column_stack([w.scalars[k] for k in TIMING]).astype(float)
    res = o.result
    return Run({"spatial": dest, "temporal": timing, "volume": volume}, counts=("spatial",),
               cost={"runtime_cycles": float(res["runtime_cycles"]), "dummies": float(res.get("dummies", 0))})


def _register():
    from veil.core.leak.observer import Observer, register_observer
    from veil.core.registry import REGISTRY

    from . import memsys  # noqa: F401  (registers the routing algorithms)

    algs = sorted(REGISTRY.components.get("memnet.injection", {}))
    return register_observer(Observer(
        system="memnet", name="channels",
        sees=("every channel of the memory network: per packet the channel crossed, the injecting CPU, its next "
              "destination module, the cycle and the flit count; not addresses, not data (encrypted and padded)"),
        settings={a: REGISTRY.components["memnet.injection"][a].doc for a in algs}, patterns=PATTERN_DOC, run=run,
        leaky=("minimal", "direct"), defences=tuple(a for a in algs if a not in ("minimal", "direct")), default_size=60,
        table=(("minimal", "uniform", "hotspot"), ("ghost_minimal", "uniform", "hotspot")), table_size=60,
        min_size=10))


OBSERVER = _register()
