"""`veil memnet latency-load CONFIG`: a config over a list of loads, a table and a figure.
`veil memnet leak CONFIG`: the channel-probing adversary's verdicts for one routing algorithm."""

from __future__ import annotations

from pathlib import Path

from veil.core import ConfigError, register_cli


def _rates(text: str) -> list[float]:
    try:
        rates = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ConfigError(f"--rates: comma-separated numbers expected, got '{text}'") from None
    if not rates or any(r < 0 for r in rates):
        raise ConfigError(f"--rates: non-negative loads expected, got '{text}'")
    return sorted(rates)


def cmd_latency_load(args) -> int:
    from veil.core.config import load_config
    from veil.core.runner import run_experiment
    from veil.core.store import ResultStore

    from veil.core.paths import check_figure_file

    check_figure_file(args.out, "--out")  # before any simulation
    experiment, cfg = load_config(args.config, args.overrides)
    if experiment != "memnet.latency_load":
        raise ConfigError(f"{args.config}: experiment must be memnet.latency_load, not {experiment}")
    rows = []
    store_path = getattr(args, "store", None)
    with (ResultStore(store_path) if store_path else ResultStore()) as store:
        for rate in _rates(args.rates):
            point = cfg.model_copy(update={"rate": rate})
            rec, _ = run_experiment(experiment, point, store, progress=True)
            r = rec.result
            rows.append((rate, r))
            sat = "saturated" if r["saturated"] else ""
            print(f"  {rate:6.3f}  latency {r['avg_packet_latency']:9.2f}  accepted "
                  f"{r['accepted_flits_per_node_cycle']:.4f}  hops {r['avg_hops']:.2f}  {sat}")
            if r["saturated"] and not args.past_saturation:
                break
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.0), layout="constrained")
    ok = [(x, r["avg_packet_latency"]) for x, r in rows if not r["saturated"]]
    if ok:
        ax.plot(*zip(*ok), "o-")
    sat = [x for x, r in rows if r["saturated"]]
    if sat:
        ax.axvline(min(sat), color="grey", ls=":", label=f"saturated at {min(sat):g}")
        ax.legend()
    ax.set_xlabel("offered load (flits/node/cycle)")
    ax.set_ylabel("average packet latency (cycles)")
    ax.set_title(Path(args.config).stem)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    print(f"wrote {out}")
    return 0


def format_leak(r: dict) -> str:
    """A memnet.leak result as the report `veil memnet leak` prints."""
    lines = [f"algorithm {r['algorithm']}: pattern A '{r['pattern_a']}' vs pattern B '{r['pattern_b']}'"
             + (f" with a redirect of {r['planted']:g} planted into B" if r.get("planted") else ""),
             f"  {r['blocks']} seed pairs (run i of A against run i of B, windows of {r['window_cycles']} cycles "
             f"aligned by position): A {r['windows_a']}, B {r['windows_b']} windows"
             f"{'  (record cut at max_events)' if r['truncated'] else ''}",
             f"  runtime A {r['runtime_a']:.0f} / B {r['runtime_b']:.0f} cycles; packets per run A "
             f"{r['packets_a']:.0f} / B {r['packets_b']:.0f}; dummies A {r['dummies_a']:.0f} / B {r['dummies_b']:.0f}"]
    for fam, what in (("spatial", "which channels, which next destinations, in blocks of packets cut by count "
                                  "(the paper's threat model)"),
                      ("temporal", "when and how many, in windows of cycles (outside the paper's threat model)"),
                      ("reply", "when each module answers: its departures against its arrivals (outside the "
                                "paper's threat model; secure.dwell_cycles closes it)")):
        if f"{fam}_statement" not in r:
            continue
        lines.append(f"{fam.upper()}: {r[f'{fam}_statement']}: {what}")
        lines.append(f"  smallest Holm-adjusted p {r[f'{fam}_p']:.3g}; measured power "
                     f"{100 * r[f'{fam}_detectable_power']:.0f}% at that effect")
        if f"{fam}_accuracy" in r:
            lines.append(f"  classifier accuracy {r[f'{fam}_accuracy']:.3f} [95% {r[f'{fam}_accuracy_lo']:.3f}, "
                         f"{r[f'{fam}_accuracy_hi']:.3f}, relabelling seed pairs] on {r[f'{fam}_accuracy_n']} "
                         f"held-out windows, p {r[f'{fam}_accuracy_p']:.3g}")
        for k in sorted(r):
            if k.startswith(f"{fam}_") and k.endswith("_p") and k not in (f"{fam}_p", f"{fam}_accuracy_p"):
                lines.append(f"  {k[len(fam) + 1:-2]:14s} p {r[k]:.3g} (aligned, exact sign-flip over seed pairs)")
    if "permutation_stream_p" in r:
        lines.append(f"PERMUTATION STREAM (CPUs' next destinations): {r['permutation_stream_verdict']} "
                     f"(p {r['permutation_stream_p']:.3g}, {r['permutation_stream_blocks']} blocks, "
                     f"{r['permutation_stream_bad_blocks']} not permutations)")
    return "\n".join(lines)


def cmd_leak(args) -> int:
    import json

    if args.calibrate:
        from .leak.calibrate import calibrate

        try:
            plants = tuple(float(x) for x in args.plants.split(","))
        except ValueError:
            raise ConfigError(f"--plants: {args.plants!r} is not a comma-separated list of fractions") from None
        for line in calibrate(args.calibrate, args.algorithm, args.pairs, plants=plants):
            print(line, flush=True)
        return 0
    if not args.config:
        raise ConfigError("config: give a memnet.leak TOML file (or --calibrate TRACE)")
    from veil.core.config import load_config
    from veil.core.runner import run_experiment
    from veil.core.store import ResultStore

    if args.json:
        from veil.core.paths import check_output_file

        check_output_file(args.json, "--json")
    experiment, cfg = load_config(args.config, args.overrides)
    if experiment != "memnet.leak":
        raise ConfigError(f"{args.config}: experiment must be memnet.leak, not {experiment}")
    store_path = getattr(args, "store", None)
    with (ResultStore(store_path) if store_path else ResultStore()) as store:
        rec, _ = run_experiment(experiment, cfg, store, progress=True)
    print(format_leak(rec.result))
    if args.json:
        Path(args.json).write_text(json.dumps(rec.result, indent=1, sort_keys=True) + "\n")
    return 0


@register_cli("memnet")
def add_commands(sub) -> None:
    p = sub.add_parser("memnet", help="memnet tools")
    msub = p.add_subparsers(dest="memnet_command", required=True)
    q = msub.add_parser("latency-load", help="run a memnet.latency_load config over loads and plot latency vs load")
    q.add_argument("config", help="TOML file of experiment memnet.latency_load")
    q.add_argument("overrides", nargs="*", help="key=value overrides")
    q.add_argument("--rates", default="0.05,0.1,0.15,0.2,0.25,0.3,0.35,0.4,0.45,0.5",
                   help="comma-separated offered loads (flits/node/cycle)")
    q.add_argument("--out", default="latency_load.png", help="figure file: .png, .svg or .pdf")
    q.add_argument("--past-saturation", action="store_true", help="keep going after the first saturated load")
    q.add_argument("--store", help="results store (default $VEIL_STORE or .veil/results.sqlite)")
    q.set_defaults(handler=cmd_latency_load)
    q = msub.add_parser("leak", help="an adversary on every channel tries to tell two secret access patterns apart")
    q.add_argument("config", nargs="?", help="TOML file of experiment memnet.leak")
    q.add_argument("overrides", nargs="*", help="key=value overrides (a.hot_modules=[1,2], algorithm=...)")
    q.add_argument("--json", default="", help="also write the result fields to this JSON file")
    q.add_argument("--store", help="results store (default $VEIL_STORE or .veil/results.sqlite)")
    q.add_argument("--calibrate", metavar="TRACE", default="",
                   help="acceptance figures on a traced program: same-secret verdicts, measured power, planted redirects")
    q.add_argument("--algorithm", default="minimal", help="with --calibrate: the routing algorithm")
    q.add_argument("--pairs", type=int, default=13, help="with --calibrate: seed pairs")
    q.add_argument("--plants", default="0.05,0.2", help="with --calibrate: redirects to plant, fractions in (0, 1]")
    q.set_defaults(handler=cmd_leak)
