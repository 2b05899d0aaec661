"""The one registry of systems, components, experiments, reproducers and benchmarks.

Systems register themselves when their package is imported; `load_systems()` imports every
subpackage of `veil` except the framework's own, so adding a system needs no edit here. A command
that names one experiment (`memnet.memsys`) imports only that system (`load_system`): start-up
stays a fraction of a CPU-second however many systems there are (docs/architecture.md).
"""

from __future__ import annotations

import fnmatch
import importlib
import importlib.util
import pkgutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from veil.core.errors import ConfigError

if TYPE_CHECKING:
    # An experiment's config is a `veil.core.config.ExperimentConfig`, typed here by its pydantic
    # base: the config module imports this registry, and the dependency goes one way only.
    from pydantic import BaseModel

# python/veil: where the system packages are found without importing `veil` itself (whose lazy
# attributes import the API, which imports this registry).
VEIL_DIR = Path(__file__).resolve().parents[1]

FRAMEWORK_PACKAGES = {"core", "cli"}

# Systems on the roadmap that have not registered anything yet: `veil list NAME` says "planned"
# instead of "unknown system". A system that registers stops being planned by itself.
PLANNED = {
    "memcrypt": "Shi, Lee et al., frequent value prediction, CF 2007: latency of decrypting and "
                "authenticating memory",
    "trace": "foundation: memory-access traces recorded from real programs, replayed by the systems",
}


def _system_of(module: str) -> str:
    parts = module.split(".")
    if parts[0] == "veil" and len(parts) > 1:
        return parts[1]
    if parts[0] == "veil_benches" and len(parts) > 1:
        return parts[1]
    return parts[0]


@dataclass(frozen=True)
class Component:
    kind: str
    name: str
    doc: str
    system: str
    params: type[BaseModel] | None = None


WARNINGS_DOC = ("", "settings the run could not honour as asked, and caveats such as saturation "
                    "(also printed on stderr)")


@dataclass(frozen=True)
class Experiment:
    name: str
    config: type[BaseModel]
    func: Callable[[Any], dict]
    doc: str
    system: str
    exclusive: bool = False  # measures wall time: its points run one at a time, never side by side
    # result field (or fnmatch pattern such as "breakdown_*") -> (unit, what it is)
    results: dict[str, tuple[str, str]] = field(default_factory=dict)
    # config -> (seconds, how they were counted): a lower bound on one point's run time, from the
    # config alone, for the experiments where it is simple; a point past a day needs --force.
    cost: Callable[[Any], tuple[float, str]] | None = None
    # the one result field a one-line listing shows (default: the first documented number with a unit)
    headline: str | None = None

    def result_doc(self, key: str) -> tuple[str, str] | None:
        """(unit, description) of a result field; nested fields match their dotted path."""
        if key in self.results:
            return self.results[key]
        for pattern, doc in self.results.items():
            if fnmatch.fnmatchcase(key, pattern):
                return doc
        if key == "warnings":
            return WARNINGS_DOC
        return None


@dataclass(frozen=True)
class Reproducer:
    system: str
    title: str
    func: Callable[[Any], None]
    order: int


@dataclass(frozen=True)
class Benchmark:
    system: str
    name: str
    func: Callable[[Any], None]
    doc: str


@dataclass
class Registry:
    components: dict[str, dict[str, Component]] = field(default_factory=dict)
    experiments: dict[str, Experiment] = field(default_factory=dict)
    reproducers: dict[str, Reproducer] = field(default_factory=dict)
    benchmarks: dict[str, Benchmark] = field(default_factory=dict)
    cli_hooks: dict[str, Callable[[Any], None]] = field(default_factory=dict)

    def component(self, kind: str, name: str) -> Component:
        known = self.components.get(kind)
        if known is None:
            raise ConfigError(f"unknown component kind '{kind}'; known: {', '.join(sorted(self.components))}")
        if name not in known:
            raise ConfigError(f"unknown {kind} '{name}'; known: {', '.join(sorted(known))}")
        return known[name]

    def has_experiment(self, name: str) -> bool:
        """Whether `name` is registered, importing only the system its prefix names (and, for
        an experiment the system declared by module, that module)."""
        if name not in self.experiments:
            load_system(name.split(".")[0])
        if name not in self.experiments and name in _DECLARED:
            importlib.import_module(_DECLARED[name])
        return name in self.experiments

    def experiment(self, name: str) -> Experiment:
        if not self.has_experiment(name):
            load_systems()  # the error lists every known experiment
        if name not in self.experiments:
            raise ConfigError(self.unknown_experiment(name))
        return self.experiments[name]

    def unknown_experiment(self, name: str) -> str:
        """One line: a name under a known system lists that system's experiments only."""
        system = str(name).partition(".")[0]
        mine = sorted({e for e, exp in self.experiments.items() if exp.system == system}
                      | {e for e in _DECLARED if e.partition(".")[0] == system})
        if mine:
            return f"unknown experiment '{name}'; {system}'s experiments: {', '.join(mine)}"
        systems = sorted({exp.system for exp in self.experiments.values()})
        return (f"unknown experiment '{name}'; experiments are named SYSTEM.NAME, systems: {', '.join(systems)} "
                f"(`veil list SYSTEM` lists a system's)")

    def systems(self) -> list[str]:
        load_reproducers()  # a system may register nothing but its reproducer and CLI (trace)
        names = {c.system for kind in self.components.values() for c in kind.values()}
        names |= {e.system for e in self.experiments.values()}
        names |= set(self.reproducers) | {b.system for b in self.benchmarks.values()}
        return sorted(names)

    def planned(self) -> dict[str, str]:
        """Roadmap systems that have not registered anything yet."""
        built = set(self.systems())
        return {k: v for k, v in PLANNED.items() if k not in built}


REGISTRY = Registry()
_loaded = False
# experiment name -> module that registers it, imported when the experiment is asked for
_DECLARED: dict[str, str] = {}


def declare_experiment(name: str, module: str) -> None:
    """Names an experiment whose module is heavy to import (numpy, scipy, an engine): the module,
    which registers it, is imported only when a command asks for the experiment (or lists all)."""
    _DECLARED[name] = module


def register_component(kind: str, name: str, doc: str, params: type[BaseModel] | None = None,
                       _depth: int = 1) -> Component:
    """Registers a named component of `kind` (e.g. "memnet.routing") with a one-line doc."""
    system = _system_of(sys._getframe(_depth).f_globals.get("__name__", "veil"))
    comp = Component(kind=kind, name=name, doc=doc, system=system, params=params)
    slot = REGISTRY.components.setdefault(kind, {})
    if name in slot and slot[name] != comp:
        raise RuntimeError(f"{kind} '{name}' registered twice")
    slot[name] = comp
    return comp


def register_components(kind: str, docs: dict[str, str]) -> None:
    """Registers one component of `kind` per name -> one-line doc (components without parameters)."""
    for name, doc in docs.items():
        register_component(kind, name, doc, _depth=2)


def register_experiment(name: str, config: type[BaseModel], doc: str = "", exclusive: bool = False,
                        results: dict[str, tuple[str, str]] | None = None,
                        cost: Callable[[Any], tuple[float, str]] | None = None, headline: str | None = None):
    """Decorator: `func(cfg) -> dict` becomes experiment `name` configured by `config`.

    `exclusive=True` marks an experiment that measures time on this machine: sweeps run its
    points one after another so they never compete for cores. `results` documents every field
    the result dict can hold: `{"latency": ("cycles", "mean packet latency"), ...}` (keys may be
    fnmatch patterns; unit "" for a count or a flag); `veil list` shows them.
    """

    def deco(func):
        exp = Experiment(name=name, config=config, func=func, doc=doc or (func.__doc__ or "").strip().split("\n")[0],
                         system=_system_of(func.__module__), exclusive=exclusive, results=dict(results or {}),
                         cost=cost, headline=headline)
        old = REGISTRY.experiments.get(name)
        if old is not None and old.func.__qualname__ != func.__qualname__:
            raise RuntimeError(f"experiment '{name}' registered twice")
        REGISTRY.experiments[name] = exp
        return func

    return deco


def register_reproducer(system: str, title: str, order: int = 50):
    """Decorator: `func(ctx)` reproduces `system`'s paper figures into the report."""

    def deco(func):
        REGISTRY.reproducers[system] = Reproducer(system=system, title=title, func=func, order=order)
        return func

    return deco


def register_benchmark(system: str, doc: str = "", name: str | None = None):
    """Decorator: `func(ctx)` is a benchmark of `system`, run by `veil bench`."""

    def deco(func):
        key = name or system
        REGISTRY.benchmarks[key] = Benchmark(system=system, name=key, func=func,
                                             doc=doc or (func.__doc__ or "").strip().split("\n")[0])
        return func

    return deco


def register_cli(system: str):
    """Decorator: `func(subparsers)` adds a system's own `veil <system> ...` commands.

    The parser it adds must `set_defaults(handler=fn)` with `fn(args) -> int`.
    """

    def deco(func):
        REGISTRY.cli_hooks[system] = func
        return func

    return deco


def system_names() -> list[str]:
    """Every system package's name, found without importing any of them."""
    return sorted(info.name for info in pkgutil.iter_modules([str(VEIL_DIR)])
                  if info.ispkg and info.name not in FRAMEWORK_PACKAGES and not info.name.startswith("_"))


def load_system(name: str) -> bool:
    """Imports one system package (its registrations run); False if `name` is not a system."""
    if name not in system_names():
        return False
    importlib.import_module(f"veil.{name}")
    return True


def load_systems() -> None:
    """Imports every system package once, so their registrations run."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    for name in system_names():
        importlib.import_module(f"veil.{name}")
    for module in sorted(set(_DECLARED.values())):
        importlib.import_module(module)


def load_reproducers() -> None:
    """Every system and its reproducer (`veil.<system>.reproduce`, registered by convention so
    that commands other than `veil reproduce` and `veil list` never import the report code)."""
    load_systems()
    for name in system_names():
        if importlib.util.find_spec(f"veil.{name}.reproduce") is not None:
            importlib.import_module(f"veil.{name}.reproduce")


def benches_dir() -> Path | None:
    """The repository's `benches/` folder: beside `python/` for a source checkout, else the cwd's."""
    for cand in (VEIL_DIR.parent.parent / "benches", Path.cwd() / "benches"):
        if cand.is_dir():
            return cand
    return None


def load_benchmarks() -> None:
    load_reproducers()
    folder = benches_dir()
    if folder is None:
        return
    for path in sorted(folder.glob("*.py")):
        modname = f"veil_benches.{path.stem}"
        if modname in sys.modules:
            continue
        spec = importlib.util.spec_from_file_location(modname, path)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[modname] = module
        spec.loader.exec_module(module)
