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


def cmd_list(args) -> int:
    from veil.core.registry import REGISTRY, load_benchmarks

    load_benchmarks()
    systems = REGISTRY.systems()
    if args.system and args.system not in systems:
        from veil.core.errors import ConfigError

        raise ConfigError(f"unknown system '{args.system}'; known: {', '.join(systems)}")
    for system in [args.system] if args.system else systems:
        print(f"{system}")
        rep = REGISTRY.reproducers.get(system)
        if rep:
            print(f"  reproducer: {rep.title}  (veil reproduce {system})")
        for b in sorted((b for b in REGISTRY.benchmarks.values() if b.system == system), key=lambda b: b.name):
            print(f"  benchmark {b.name}: {b.doc}")
        for name, exp in sorted(REGISTRY.experiments.items()):
            if exp.system != system:
                continue
            print(f"  experiment {name}: {exp.doc}")
            for line in _describe_model(exp.config):
                print(f"      {line}")
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


def cmd_run(args) -> int:
    from veil.core.config import load_config
    from veil.core.runner import run_experiment

    experiment, cfg = load_config(args.config, args.overrides)
    with _store(args) as store:
        rec, cached = run_experiment(experiment, cfg, store, force=args.force)
    print(f"{experiment}  config {rec.config_hash}  veil {rec.veil_version}  "
          f"{'(cached)' if cached else f'({rec.elapsed_s:.2f} s)'}")
    from veil.core.store import flatten

    _print_table([(k, _fmt_value(v)) for k, v in flatten("", rec.result, {}).items()])
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(rec.as_dict(), indent=2) + "\n")
    return 0


def cmd_sweep(args) -> int:
    from veil.core.sweep import load_spec, run_sweep

    spec = load_spec(args.sweep, args.overrides)
    if args.jobs < 1:
        from veil.core.errors import ConfigError

        raise ConfigError(f"--jobs {args.jobs}: must be at least 1")
    print(f"sweep {spec.name}: {spec.experiment}, {len(spec.configs)} points")
    with _store(args) as store:
        out = run_sweep(spec, store, jobs=args.jobs, scheduler=args.scheduler, force=args.force,
                        progress=not args.no_progress)
    for i, err in out.failed:
        print(f"  point {i} failed: {err}", file=sys.stderr)
    print(out.summary())
    if args.json:
        Path(args.json).write_text(json.dumps([r.as_dict() for r in out.records], indent=2) + "\n")
    return 1 if out.failed else 0


def cmd_reproduce(args) -> int:
    from veil.core.report import reproduce

    out = Path(args.out)
    with _store(args) as store:
        sections, metrics = reproduce(args.systems, out, store, quick=not args.full, jobs=args.jobs)
    failed = [s.system for s in sections if s.error]
    print(f"wrote {out / 'index.html'} and {out / 'results.json'} ({len(metrics)} metrics)")
    if failed:
        print(f"veil: error: reproduction failed for {', '.join(failed)} (details in the report)", file=sys.stderr)
        return 1
    return 0


def cmd_bench(args) -> int:
    from veil.core.bench import run_benchmarks

    if args.contention:
        os.environ["VEIL_BENCH_CONTENTION"] = "1"
    run_benchmarks(args.systems, Path(args.json) if args.json else None)
    return 0


def cmd_results(args) -> int:
    from veil.core.errors import ConfigError
    from veil.core.store import export

    with _store(args) as store:
        if args.action == "list":
            rows = list(store.records(args.experiment))
            for r in rows:
                print(f"{r.experiment:<28} {r.config_hash}  veil {r.veil_version}  seed {r.seed}  "
                      f"{r.elapsed_s:8.2f} s  {r.created_at}")
            print(f"{len(rows)} results in {store.path}")
        else:
            if args.format not in ("csv", "parquet"):
                raise ConfigError(f"--format {args.format}: expected csv or parquet")
            out = Path(args.out or f"results.{args.format}")
            n = export(store, args.format, out, args.experiment)
            print(f"exported {n} results to {out}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    from veil import __version__

    p = _Parser(prog="veil", description="Veil: models of systems that protect offloaded computation.")
    p.add_argument("--version", action="version", version=f"veil {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    store_opt = _Parser(add_help=False)
    store_opt.add_argument("--store", help="results store (default $VEIL_STORE or .veil/results.sqlite)")

    s = sub.add_parser("list", help="systems, experiments, components, their parameters and defaults")
    s.add_argument("system", nargs="?")
    s.set_defaults(handler=cmd_list)

    s = sub.add_parser("run", parents=[store_opt], help="run one configured experiment")
    s.add_argument("config", help="TOML config with `experiment = NAME`")
    s.add_argument("overrides", nargs="*", metavar="key=value")
    s.add_argument("--json", help="also write the result record to this file")
    s.add_argument("--force", action="store_true", help="recompute even if the store has this point")
    s.set_defaults(handler=cmd_run)

    s = sub.add_parser("sweep", parents=[store_opt], help="run a parameter sweep (cached points skipped)")
    s.add_argument("sweep", help="sweep TOML: experiment, [base], [grid], [zip]")
    s.add_argument("overrides", nargs="*", metavar="key=value")
    s.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="local worker processes")
    s.add_argument("--scheduler", help="Dask scheduler address, e.g. tcp://HOST:8786")
    s.add_argument("--force", action="store_true", help="recompute cached points")
    s.add_argument("--no-progress", action="store_true")
    s.add_argument("--json", help="write every record to this file")
    s.set_defaults(handler=cmd_sweep)

    s = sub.add_parser("reproduce", parents=[store_opt], help="reproduce the papers' experiments into a report")
    s.add_argument("systems", nargs="*", metavar="SYSTEM")
    mode = s.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="small points, minutes in all (default)")
    mode.add_argument("--full", action="store_true", help="every point of the papers' figures")
    s.add_argument("--out", default="report", help="output folder (default report/)")
    s.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    s.set_defaults(handler=cmd_reproduce)

    s = sub.add_parser("bench", help="run registered benchmarks")
    s.add_argument("systems", nargs="*", metavar="SYSTEM")
    s.add_argument("--json", help="write the figures as a flat JSON object")
    s.add_argument("--contention", action="store_true",
                   help="also run beside a CPU-bound process (benchmarks that support it: oram)")
    s.set_defaults(handler=cmd_bench)

    s = sub.add_parser("results", parents=[store_opt], help="list or export stored results")
    s.add_argument("action", choices=["list", "export"])
    s.add_argument("--experiment")
    s.add_argument("--format", default="csv", help="csv or parquet (export)")
    s.add_argument("--out", help="export file (default results.FORMAT)")
    s.set_defaults(handler=cmd_results)

    from veil.core.registry import REGISTRY, load_systems

    load_systems()
    for _system, hook in sorted(REGISTRY.cli_hooks.items()):
        hook(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    from veil.core.errors import VeilError

    try:
        parser = build_parser()
        args = parser.parse_args(argv)
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
