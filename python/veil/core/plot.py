"""`veil plot`: any two keys of stored results against each other, optionally one line per value
of a third, for a sweep file's points or all results of an experiment."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from veil.core.errors import ConfigError
from veil.core.store import Record, ResultStore, flatten


def _records(store: ResultStore, source: str) -> tuple[str, list[Record]]:
    from veil.core.registry import REGISTRY, load_systems

    load_systems()
    path = Path(source)
    if path.suffix == ".toml" or path.exists():
        from veil.core.config import config_hash
        from veil.core.runner import veil_version
        from veil.core.sweep import load_spec

        spec = load_spec(path)
        wanted = {config_hash(spec.experiment, c) for c in spec.configs}
        best: dict[str, Record] = {}
        current = veil_version()
        for r in store.records(spec.experiment):
            if r.config_hash not in wanted:
                continue
            old = best.get(r.config_hash)
            # This code's result if there is one, else the newest stored one.
            if old is None or (r.veil_version == current) > (old.veil_version == current) or \
                    ((r.veil_version == current) == (old.veil_version == current) and r.created_at > old.created_at):
                best[r.config_hash] = r
        if not best:
            raise ConfigError(f"{source}: none of its {len(wanted)} points is in {store.path}; "
                              f"run `veil sweep {source}` first")
        return spec.experiment, list(best.values())
    REGISTRY.experiment(source)  # unknown name: ConfigError listing the known ones
    rows = list(store.records(source))
    if not rows:
        raise ConfigError(f"no stored results of {source} in {store.path}")
    return source, rows


def _row(r: Record) -> dict[str, Any]:
    flat = {"seed": r.seed, **flatten("", r.config, {})}
    for k, v in flatten("", r.result, {}).items():
        flat.setdefault(k, v)
        flat[f"result.{k}"] = v
    return flat


def _value(text: str) -> Any:
    from veil.core.config import parse_value

    return parse_value(text)


def plot(store: ResultStore, source: str, x: str, y: str, *, hue: str | None = None, out: Path,
         filters: list[str] | None = None, logx: bool = False, logy: bool = False) -> int:
    experiment, records = _records(store, source)
    rows = [_row(r) for r in records]
    for item in filters or []:
        if "=" not in item:
            raise ConfigError(f"filter '{item}': expected key=value")
        key, _, raw = item.partition("=")
        want = _value(raw.strip())
        rows = [r for r in rows if key.strip() in r and (r[key.strip()] == want or str(r[key.strip()]) == str(want))]
    if not rows:
        raise ConfigError(f"{source}: no stored result matches {' '.join(filters or [])}")
    keys = sorted({k for r in rows for k in r if not k.startswith("result.")})
    for flag, key in (("--x", x), ("--y", y), ("--hue", hue)):
        if key is not None and not any(key in r for r in rows):
            raise ConfigError(f"{flag} {key}: not a key of {experiment}'s results; known: {', '.join(keys)}")
    points = [r for r in rows if r.get(x) is not None and isinstance(r.get(y), (int, float))]
    if not points:
        raise ConfigError(f"--y {y}: no numeric values to plot")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups: dict[str, list[dict]] = {}
    for r in points:
        label = "" if hue is None else f"{hue}={json.dumps(r.get(hue)) if isinstance(r.get(hue), (list, dict)) else r.get(hue)}"
        groups.setdefault(label, []).append(r)
    _refuse_mixed_lines(groups, {k for r in records for k in flatten("", r.config, {})} | {"seed"}, x, hue)
    numeric_x = all(isinstance(r[x], (int, float)) and not isinstance(r[x], bool) for r in points)
    categories = sorted({str(r[x]) for r in points}) if not numeric_x else []
    fig, ax = plt.subplots(figsize=(6.4, 4.0), layout="constrained")
    for label, grp in sorted(groups.items()):
        if numeric_x:
            grp.sort(key=lambda r: r[x])
            xs = [r[x] for r in grp]
        else:
            grp.sort(key=lambda r: categories.index(str(r[x])))
            xs = [categories.index(str(r[x])) for r in grp]
        ax.plot(xs, [r[y] for r in grp], "o-", label=label or None)
    if not numeric_x:
        ax.set_xticks(range(len(categories)), categories, rotation=30, ha="right")
    if logx and numeric_x:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(_label(experiment, x))
    ax.set_ylabel(_label(experiment, y))
    ax.set_title(f"{experiment} ({Path(source).name})", fontsize=10)
    if hue is not None:
        ax.legend(fontsize=8)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return len(points)


def _refuse_mixed_lines(groups: dict[str, list[dict]], config_keys: set[str], x: str, hue: str | None) -> None:
    """One line joins points that differ only in x: a config key that varies among a line's
    points and is neither x nor the hue would silently draw, say, a mesh and a dragonfly point
    as one curve."""
    differing: list[str] = []
    for grp in groups.values():
        for key in sorted(config_keys - {x, hue}):
            values = {json.dumps(r.get(key), sort_keys=True) for r in grp}
            if len(values) > 1 and key not in differing:
                differing.append(key)
    if differing:
        first = differing[0]
        example = next(r.get(first) for g in groups.values() for r in g)
        raise ConfigError(f"the points to plot differ in {', '.join(differing)}, which the plot does not show: "
                          f"give --hue {first} (one line per value) or a filter such as "
                          f"{first}={json.dumps(example) if isinstance(example, (list, dict)) else example}")


def _label(experiment: str, key: str) -> str:
    from veil.core.registry import REGISTRY

    exp = REGISTRY.experiments.get(experiment)
    doc = exp.result_doc(key.removeprefix("result.")) if exp else None
    if doc and doc[0]:
        return f"{key} ({doc[0]})"
    if exp:
        field = exp.config.model_fields.get(key)
        if field is not None and field.description:
            return _wrap(f"{key}: {field.description}")
    return key


def _wrap(text: str, width: int = 72, lines: int = 2) -> str:
    # an axis label wider than the figure is clipped at its edge (a cut word reads as a wrong unit),
    # so it wraps, and what does not fit in two lines ends in an ellipsis
    import textwrap

    parts = textwrap.wrap(text, width)
    if len(parts) > lines:
        parts = parts[:lines]
        parts[-1] = textwrap.shorten(parts[-1] + " ...", width, placeholder=" ...")
    return "\n".join(parts)
