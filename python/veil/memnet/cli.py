"""`veil memnet latency-load CONFIG`: a config over a list of loads, a table and a figure."""

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
            rec, _ = run_experiment(experiment, point, store)
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
    q.set_defaults(handler=cmd_latency_load)
