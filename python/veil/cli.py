"""The `veil` command. Every error is one line on stderr: exit 2 for bad input, 1 for failures."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, Literal, Sequence


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, not usage plus error
        self.exit(2, f"veil: error: {message} (see '{self.prog} --help')\n")


def _store(args):
    from veil.core.store import ResultStore

    return ResultStore(args.store) if args.store else ResultStore()


SHOW_IN_FULL = 5  # `results show` of more results prints a table instead of every config in full


def _store_path(args) -> Path:
    from veil.core.store import default_path

    return Path(args.store) if args.store else default_path()


def _print_table(rows: list[tuple[str, str]], out=sys.stdout) -> None:
    width = max((len(k) for k, _ in rows), default=0)
    for k, v in rows:
        print(f"  {k:<{width}}  {v}", file=out)


def _fmt_value(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, (list, dict)):
        text = json.dumps(v)
        return text if len(text) <= 100 else text[:97] + "..."
    return str(v)


def _print_experiment(exp, results_indent: str) -> None:
    """An experiment's config fields, then its documented result fields with their units."""
    for line in _describe_model(exp.config):
        print(f"      {line}")
    if exp.results:
        print(f"{results_indent}results:")
        for key, (unit, what) in exp.results.items():
            print(f"      {key} ({unit or 'no unit'}): {what}")


def cmd_list(args) -> int:
    from veil.core.registry import REGISTRY, load_benchmarks

    load_benchmarks()
    from veil.core import leak_table  # noqa: F401  (registers `veil reproduce leak`: leak is a system too)

    systems = REGISTRY.systems()
    planned = REGISTRY.planned()
    if args.system and args.system not in systems and args.system in REGISTRY.experiments:
        exp = REGISTRY.experiments[args.system]
        print(f"{args.system} ({exp.system}): {exp.doc}")
        print("  config (key (type, default, range): meaning):")
        _print_experiment(exp, "  ")
        return 0
    if args.system in planned:
        print(f"{args.system}: planned, not built yet ({planned[args.system]})")
        return 0
    if args.system and args.system not in systems:
        from veil.core.errors import ConfigError

        if "." in args.system:
            raise ConfigError(REGISTRY.unknown_experiment(args.system))
        raise ConfigError(f"unknown system '{args.system}'; known: {', '.join(systems)}; "
                          f"planned: {', '.join(planned) or '(none)'}")
    if not args.system:
        for name, what in planned.items():
            print(f"{name}  (planned: {what})")
    for system in [args.system] if args.system else systems:
        print(f"{system}")
        rep = REGISTRY.reproducers.get(system)
        if rep:
            print(f"  reproducer: {rep.title}  (veil reproduce {system})")
        if system == "leak":
            _print_observers()
        for b in sorted((b for b in REGISTRY.benchmarks.values() if b.system == system), key=lambda b: b.name):
            print(f"  benchmark {b.name}: {b.doc}")
        for name, exp in sorted(REGISTRY.experiments.items()):
            if exp.system != system:
                continue
            print(f"  experiment {name}: {exp.doc}")
            _print_experiment(exp, "    ")
        for kind, comps in sorted(REGISTRY.components.items()):
            mine = [c for c in comps.values() if c.system == system]
            if not mine:
                continue
            print(f"  components {kind}:")
            for c in sorted(mine, key=lambda c: c.name):
                print(f"      {c.name}: {c.doc}")
                if c.params is not None:
                    for line in _describe_model(c.params):
                        print(f"          {line}")
    return 0


def _print_observers() -> None:
    """`veil leak`'s attackers, one per system that has one (docs/leak.md)."""
    import importlib

    from veil.core.leak.analyse import _systems_with_observers
    from veil.core.leak.observer import observers

    for system in _systems_with_observers():
        importlib.import_module(f"veil.{system}.observer")
    print("  command: veil leak CONFIG (system, observer, setting, a, b: configs/leak/*.toml)")
    for (system, name), obs in sorted(observers().items()):
        print(f"  observer {system}.{name}: {obs.sees}")
        print(f"      settings: {', '.join(obs.settings)}; patterns: {', '.join(obs.patterns)}")


def _describe_model(model) -> list[str]:
    lines = []
    for name, f in model.model_fields.items():
        ann = f.annotation
        tname = getattr(ann, "__name__", None) or str(ann).replace("typing.", "")
        extra = f.json_schema_extra if isinstance(f.json_schema_extra, dict) else {}
        for m in f.metadata:
            inner = getattr(m, "json_schema_extra", None)
            if isinstance(inner, dict):
                extra = {**extra, **inner}
        if "component" in extra:
            tname = f"name of a {extra['component']}"
        elif getattr(ann, "__origin__", None) is Literal:
            tname = "one of " + ", ".join(repr(a) for a in ann.__args__)
        bounds = []
        for m in f.metadata:
            for attr, sym in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
                val = getattr(m, attr, None)
                if val is not None:
                    bounds.append(f"{sym} {val}")
        default = "required" if f.is_required() else f"default {f.get_default(call_default_factory=True)!r}"
        rng = f", {' and '.join(bounds)}" if bounds else ""
        lines.append(f"{name} ({tname}, {default}{rng}): {f.description or ''}")
    return lines


def _config_rows(cfg) -> list[tuple[str, str]]:
    """(dotted key, value) of every field that differs from its default, in declaration order."""
    from pydantic import BaseModel

    rows: list[tuple[str, str]] = []

    def walk(model: BaseModel, prefix: str) -> None:
        for name, f in type(model).model_fields.items():
            value = getattr(model, name)
            key = f"{prefix}{name}"
            if isinstance(value, BaseModel):
                walk(value, key + ".")
                continue
            if f.is_required() or value != f.get_default(call_default_factory=True):
                rows.append((key, _fmt_value(value)))

    walk(cfg, "")
    return rows


def _result_rows(experiment: str, result: dict) -> list[tuple[str, str]]:
    """(field, value with its unit) of a result; warnings go to stderr instead."""
    from veil.core.registry import REGISTRY
    from veil.core.store import flatten

    exp = REGISTRY.experiments.get(experiment)
    rows = []
    flat = flatten("", {k: v for k, v in result.items() if k != "warnings"}, {})
    if exp and exp.results:  # the documented order: a result read back from the store prints as a fresh one
        import fnmatch

        patterns = list(exp.results)

        def rank(key: str) -> int:
            top = key.split(".")[0]
            return next((i for i, p in enumerate(patterns) if fnmatch.fnmatchcase(key, p)
                         or fnmatch.fnmatchcase(top, p)), len(patterns))

        flat = dict(sorted(flat.items(), key=lambda kv: rank(kv[0])))
    for k, v in flat.items():
        doc = exp.result_doc(k) if exp else None
        text = f"{_fmt_value(v)} {doc[0]}".rstrip() if doc else _fmt_value(v)
        rows.append((k, text + ("   <- SATURATED" if k == "saturated" and v is True else "")))
    return rows


def _warn(result: dict, where: str = "") -> None:
    for w in result.get("warnings") or []:
        print(f"veil: warning: {where}{w}", file=sys.stderr)


def cmd_run(args) -> int:
    from veil.core.config import load_run
    from veil.core.paths import check_output_file
    from veil.core.runner import run_experiment

    if args.json:
        check_output_file(args.json, "--json", (args.config, _store_path(args)))
    experiment, cfg = load_run(args.config, args.overrides)
    with _store(args) as store:
        rec, cached = run_experiment(experiment, cfg, store, force=args.force,
                                     progress=not args.no_progress)
    warnings = rec.result.get("warnings") or []
    marks = ("  [SATURATED]" if rec.result.get("saturated") else "") + \
        (f"  [{len(warnings)} warning{'s' if len(warnings) > 1 else ''}, on stderr]" if warnings else "")
    print(f"{experiment}  config {rec.config_hash}  veil {rec.veil_version}  "
          f"{'(cached)' if cached else f'({rec.elapsed_s:.2f} s)'}{marks}")
    rows = _config_rows(cfg)
    print("config (keys that differ from the defaults; `veil results show` lists all):" if rows
          else "config: all defaults")
    _print_table(rows)
    print("result:")
    _print_table(_result_rows(experiment, rec.result))
    _warn(rec.result)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(rec.as_dict(), indent=2) + "\n")
    return 0


def cmd_sweep(args) -> int:
    from veil.core.errors import ConfigError
    from veil.core.paths import check_output_file
    from veil.core.sweep import load_spec, run_sweep

    if args.jobs < 1:
        raise ConfigError(f"--jobs {args.jobs}: must be at least 1")
    if args.json:
        check_output_file(args.json, "--json", (args.sweep, _store_path(args)))
    spec = load_spec(args.sweep, args.overrides, progress=not args.no_progress)
    print(f"sweep {spec.name}: {spec.experiment}, {len(spec.configs)} points")
    with _store(args) as store:
        out = run_sweep(spec, store, jobs=args.jobs, scheduler=args.scheduler, force=args.force,
                        progress=not args.no_progress)
    for i, err in out.failed:
        print(f"  point {i} failed: {err}", file=sys.stderr)
    for rec in out.records:
        _warn(rec.result, f"point {rec.config_hash}: ")
    from veil.core.table import compact_table

    for line in compact_table(out.records, limit=len(out.records) if args.table else 20,
                              more_hint=f" (--table shows all; `veil results list --experiment {spec.experiment}`)"):
        print(line)
    print(out.summary())
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps([r.as_dict() for r in out.records], indent=2) + "\n")
    return 1 if out.failed else 0


def cmd_leak(args) -> int:
    from veil.core.errors import ConfigError
    from veil.core.leak.run import execute, lines, load
    from veil.core.paths import check_output_file

    if args.jobs < 1:
        raise ConfigError(f"--jobs {args.jobs}: must be at least 1")
    if args.json:
        check_output_file(args.json, "--json", (args.config, _store_path(args)))
    cfg = load(args.config, args.overrides)
    with _store(args) as store:
        report = execute(cfg, store, jobs=args.jobs, scheduler=args.scheduler, force=args.force, progress=True)
    print("\n".join(lines(report)))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    return 0


def cmd_reproduce(args) -> int:
    from veil.core.paths import check_output_dir
    from veil.core.report import reproduce

    if args.jobs < 1:
        from veil.core.errors import ConfigError

        raise ConfigError(f"--jobs {args.jobs}: must be at least 1")
    out = check_output_dir(args.out, "--out")
    with _store(args) as store:
        sections, metrics = reproduce(args.systems, out, store, quick=not args.full, jobs=args.jobs,
                                      scheduler=args.scheduler)
    failed = [s.system for s in sections if s.error]
    print(f"wrote {out / 'index.html'} and {out / 'results.json'} ({len(metrics)} metrics)")
    if failed:
        print(f"veil: error: reproduction failed for {', '.join(failed)} (details in the report)", file=sys.stderr)
        return 1
    return 0


def cmd_explain(args) -> int:
    from veil.core.explain import check_key, explain, render
    from veil.core.errors import ConfigError
    from veil.core.paths import check_output_file

    if args.json:
        check_output_file(args.json, "--json")
    if args.samples < 0 or args.samples > 100_000:
        raise ConfigError(f"--samples {args.samples}: 0..100000")
    if not 2 <= args.levels <= 1000:
        raise ConfigError(f"--levels {args.levels}: 2..1000")
    check_key(args.key)
    with _store(args) as store:
        ex = explain(args.key, store, quick=not args.full, jobs=max(1, args.jobs), scheduler=args.scheduler,
                     samples=args.samples, seed=args.seed, levels=args.levels, log=lambda m: print(m, file=sys.stderr))
    print(render(ex))
    if args.json:
        Path(args.json).write_text(json.dumps(ex.as_dict(), indent=2, default=str) + "\n")
    return 0


def cmd_bench(args) -> int:
    from veil.core.bench import run_benchmarks
    from veil.core.paths import check_output_file

    if args.json:
        check_output_file(args.json, "--json")
    if args.contention:
        os.environ["VEIL_BENCH_CONTENTION"] = "1"
    run_benchmarks(args.systems, Path(args.json) if args.json else None)
    return 0


def _select(store, args) -> list:
    """Records of --experiment, narrowed by the ID and key=value items given."""
    from veil.core.config import parse_value
    from veil.core.errors import ConfigError
    from veil.core.store import flatten

    if args.experiment and args.experiment not in store.experiments():
        from veil.core.registry import REGISTRY

        REGISTRY.experiment(args.experiment)  # an unknown name: ConfigError listing the known ones
    filters, refs = [], []
    for item in args.items:
        if "=" in item:
            key, _, raw = item.partition("=")
            filters.append((key.strip(), parse_value(raw.strip())))
        else:
            refs.append(item)
    if refs:
        rows = []
        for ref in refs:
            hits = store.find(ref)
            if not hits:
                raise ConfigError(f"no result with ID or config hash '{ref}' in {store.path}")
            rows += [r for r in hits if not args.experiment or r.experiment == args.experiment]
    else:
        rows = list(store.records(args.experiment))
    for key, want in filters:
        kept = []
        known = False
        for r in rows:
            flat = {"experiment": r.experiment, "seed": r.seed, **flatten("", r.config, {}),
                    **{f"result.{k}": v for k, v in flatten("", r.result, {}).items()}}
            if key in flat:
                known = True
                if flat[key] == want or str(flat[key]) == str(want):
                    kept.append(r)
        if rows and not known:
            raise ConfigError(f"filter '{key}': no listed result has this key (config keys are dotted, "
                              f"result keys start with 'result.')")
        rows = kept
    return rows


def cmd_results(args) -> int:
    from veil.core.errors import ConfigError
    from veil.core.store import export, flatten
    from veil.core.table import compact_table, differing, headline

    if args.action == "export":
        from veil.core.paths import check_output_file

        if args.format not in ("csv", "parquet"):
            raise ConfigError(f"--format {args.format}: expected csv or parquet")
        check_output_file(args.out or f"results.{args.format}", "--out", (_store_path(args),))
    if args.action in ("show", "delete") and not (args.items or args.experiment):
        raise ConfigError(f"results {args.action}: name results by ID, config hash, --experiment or key=value")
    with _store(args) as store:
        rows = _select(store, args)
        if args.action == "list":
            by_exp: dict[str, list] = {}
            for r in rows:
                by_exp.setdefault(r.experiment, []).append(r)
            asked = [i.partition("=")[0].strip() for i in args.items if "=" in i]
            for exp, recs in by_exp.items():
                diff = differing(recs)
                print(f"{exp}  ({len(recs)} results" + (f"; differing: {', '.join(diff)})" if diff else ")"))
                shown = [k for k in asked if k not in diff and not k.startswith("result.") and k != "experiment"] + diff
                for r in recs:
                    flat = {"seed": r.seed, **flatten("", r.config, {})}
                    params = "  ".join(f"{k}={_fmt_value(flat.get(k))}" for k in shown)
                    head = headline(r)
                    value = f"  {head[0]}={head[1]}" if head else ""
                    print(f"  {r.id:>5}  {r.config_hash}  {params}{value}  {r.elapsed_s:.2f} s  {r.created_at}"
                          f"  veil {r.veil_version}")
            print(f"{len(rows)} results in {store.path}")
        elif args.action == "show" and len(rows) > SHOW_IN_FULL and not args.all:
            print(f"{len(rows)} results; what tells them apart and each one's headline value "
                  f"(`veil results show ID` for one in full, --all for every one):")
            for line in compact_table(rows, limit=len(rows)):
                print(line)
        elif args.action == "show":
            for r in rows:
                print(f"ID {r.id}  {r.experiment}  config {r.config_hash}  veil {r.veil_version}  "
                      f"{r.elapsed_s:.2f} s  {r.created_at}")
                print("config:")
                _print_table([(k, _fmt_value(v)) for k, v in flatten("", r.config, {}).items()])
                print("result:")
                _print_table(_result_rows(r.experiment, r.result))
                _warn(r.result)
        elif args.action == "delete":
            n = store.delete([r.id for r in rows])
            print(f"deleted {n} results from {store.path}")
        else:
            out = Path(args.out or f"results.{args.format}")
            n = export(store, args.format, out, args.experiment, records=rows)
            print(f"exported {n} results to {out}")
    return 0


def cmd_plot(args) -> int:
    from veil.core.paths import check_figure_file
    from veil.core.plot import plot

    out = check_figure_file(args.out, "--out", (args.source, _store_path(args)))
    with _store(args) as store:
        n = plot(store, args.source, args.x, args.y, hue=args.hue, out=out, filters=args.filters,
                 logx=args.logx, logy=args.logy)
    print(f"wrote {out} ({n} points)")
    return 0


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser; a system's own commands (`veil memnet ...`) are added only when `argv` names
    that system, or for help, so other commands never import a system they do not run."""
    from veil import __version__

    p = _Parser(prog="veil", description="Veil: models of systems that protect offloaded computation.")
    p.add_argument("--version", action="version", version=f"veil {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    store_opt = _Parser(add_help=False)
    store_opt.add_argument("--store", help="results store (default $VEIL_STORE or .veil/results.sqlite)")

    s = sub.add_parser("list", help="systems, experiments, components, their parameters and defaults")
    s.add_argument("system", nargs="?", metavar="SYSTEM_OR_EXPERIMENT",
                   help="one system (e.g. memnet) or one experiment (e.g. memnet.memsys)")
    s.set_defaults(handler=cmd_list)

    s = sub.add_parser("run", parents=[store_opt], help="run one configured experiment")
    s.add_argument("config", metavar="CONFIG_OR_EXPERIMENT",
                   help="TOML config with `experiment = NAME`, or an experiment's name to run its defaults")
    s.add_argument("overrides", nargs="*", metavar="key=value",
                   help="set config keys: dotted for nested tables (secure.batch=4), values as in TOML "
                        "(4, 0.5, true, [1, 2], mesh)")
    s.add_argument("--json", help="also write the result record to this file")
    s.add_argument("--force", action="store_true", help="recompute even if the store has this point")
    s.add_argument("--no-progress", action="store_true",
                   help="no progress line (drawn on a terminal only unless VEIL_PROGRESS=1)")
    s.set_defaults(handler=cmd_run)

    s = sub.add_parser("leak", parents=[store_opt],
                       help="an attacker of one system tries to tell two secrets apart (verdicts with measured power)")
    s.add_argument("config", help="TOML: system, observer, setting, a, b, repeats, seed, size, alpha")
    s.add_argument("overrides", nargs="*", metavar="key=value", help="set config keys (setting=plain, repeats=16)")
    s.add_argument("--jobs", type=int, default=1, help="local worker processes for the runs")
    s.add_argument("--scheduler", help="Dask scheduler address, e.g. tcp://HOST:8786: the runs go there")
    s.add_argument("--json", help="also write the full report to this file")
    s.add_argument("--force", action="store_true", help="recompute even if the store has this verdict")
    s.set_defaults(handler=cmd_leak)

    s = sub.add_parser("sweep", parents=[store_opt], help="run a parameter sweep (cached points skipped)")
    s.add_argument("sweep", help="sweep TOML: experiment, [base], [grid], [zip]")
    s.add_argument("overrides", nargs="*", metavar="key=value",
                   help="set keys of the sweep file: base.KEY=V changes every point's config "
                        "(base.k=4), grid.KEY=[..] or zip.KEY=[..] a varied list")
    s.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="local worker processes")
    s.add_argument("--scheduler", help="Dask scheduler address, e.g. tcp://HOST:8786")
    s.add_argument("--force", action="store_true", help="recompute cached points")
    s.add_argument("--no-progress", action="store_true",
                   help="no progress bar (drawn on a terminal only unless VEIL_PROGRESS=1)")
    s.add_argument("--json", help="write every record to this file")
    s.add_argument("--table", action="store_true", help="print every point in the closing table (default: 20)")
    s.set_defaults(handler=cmd_sweep)

    s = sub.add_parser("reproduce", parents=[store_opt], help="reproduce the papers' experiments into a report")
    s.add_argument("systems", nargs="*", metavar="SYSTEM")
    mode = s.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="small points, minutes in all (default)")
    mode.add_argument("--full", action="store_true", help="every point of the papers' figures")
    s.add_argument("--out", default="report", help="output folder (default report/)")
    s.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                   help="local worker processes for the uncached points (default: one per core)")
    s.add_argument("--scheduler", help="Dask scheduler address (e.g. tcp://HOST:8786): uncached points run there")
    s.set_defaults(handler=cmd_reproduce)

    s = sub.add_parser("explain", parents=[store_opt],
                       help="how sure a report row's verdict is: its assumptions moved over their ranges")
    s.add_argument("key", help="a report row key, e.g. he/taco/enc_speedup_8192_3 (references.json)")
    s.add_argument("--full", action="store_true", help="evaluate the row as the full report does (default: quick)")
    s.add_argument("--samples", type=int, default=32, help="joint Latin-hypercube points (0: one at a time only)")
    s.add_argument("--seed", type=int, default=0, help="seed of the joint design")
    s.add_argument("--levels", type=int, default=5, help="points over each range, one assumption at a time (>= 2)")
    s.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="local worker processes for the points")
    s.add_argument("--scheduler", help="Dask scheduler address: the points go there (workers share the store)")
    s.add_argument("--json", help="also write the explanation to this file")
    s.set_defaults(handler=cmd_explain)

    s = sub.add_parser("bench", help="run registered benchmarks")
    s.add_argument("systems", nargs="*", metavar="SYSTEM")
    s.add_argument("--json", help="write the figures as a flat JSON object")
    s.add_argument("--contention", action="store_true",
                   help="also run beside a CPU-bound process (benchmarks that support it: oram)")
    s.set_defaults(handler=cmd_bench)

    s = sub.add_parser("results", parents=[store_opt], help="list, show, delete or export stored results")
    s.add_argument("action", choices=["list", "show", "delete", "export"])
    s.add_argument("items", nargs="*", metavar="ID|key=value",
                   help="result IDs or config-hash prefixes, and key=value filters (dotted config keys, "
                        "result.KEY for results)")
    s.add_argument("--experiment")
    s.add_argument("--format", default="csv", help="csv or parquet (export)")
    s.add_argument("--out", help="export file (default results.FORMAT)")
    s.add_argument("--all", action="store_true",
                   help=f"show: every result in full even when there are more than {SHOW_IN_FULL}")
    s.set_defaults(handler=cmd_results)

    s = sub.add_parser("plot", parents=[store_opt], help="plot stored results: any sweep, any two keys")
    s.add_argument("source", metavar="SWEEP_OR_EXPERIMENT",
                   help="a sweep file (its points are read from the store) or an experiment name")
    s.add_argument("filters", nargs="*", metavar="key=value", help="keep only results with these values")
    s.add_argument("--x", required=True, help="x axis: a config key (dotted) or a result key")
    s.add_argument("--y", required=True, help="y axis: a result key (or a config key)")
    s.add_argument("--hue", help="one line per value of this key")
    s.add_argument("--out", default="plot.png", help="figure file: .png, .svg or .pdf (default plot.png)")
    s.add_argument("--logx", action="store_true")
    s.add_argument("--logy", action="store_true")
    s.set_defaults(handler=cmd_plot)

    from veil.core.registry import REGISTRY, load_system, load_systems

    args = list(sys.argv[1:] if argv is None else argv)
    words = [a for a in args if not a.startswith("-")]
    if words and words[0] not in sub.choices:
        if not load_system(words[0]):
            load_systems()  # an unknown command: argparse lists every system's commands
    elif not words and "--version" not in args:
        load_systems()  # top-level help lists every system's commands
    for _system, hook in sorted(REGISTRY.cli_hooks.items()):
        hook(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    from veil.core.errors import VeilError

    try:
        parser = build_parser(argv)
        # Options may come after key=value overrides (`veil run C --store X k=v`): argparse stops
        # filling a positional list at the first option, so the rest come back as extras.
        args, extra = parser.parse_known_args(argv)
        if extra:
            target = next((n for n in ("overrides", "filters", "items") if isinstance(getattr(args, n, None), list)),
                          None)
            stray = [x for x in extra if target is None or x.startswith("-") or ("=" not in x and target != "items")]
            if stray:
                parser.error(f"unrecognized arguments: {' '.join(stray)}")
            getattr(args, target).extend(extra)
        if not getattr(args, "handler", None):
            parser.print_help()
            return 2
        return int(args.handler(args) or 0)
    except VeilError as e:
        print(f"veil: error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("veil: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as e:
        if os.environ.get("VEIL_DEBUG"):
            raise
        print(f"veil: internal error: {type(e).__name__}: {e} (set VEIL_DEBUG=1 for a traceback)",
              file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
