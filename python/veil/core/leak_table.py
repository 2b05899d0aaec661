"""The report's leakage table (`veil reproduce leak`): every system's attacker on the cases its
observer lists, one row per feature family under leak/<system>/<observer>/<setting>/<a>-vs-<b>/<family>.

Registered when the report is built (veil.core.report imports this module), so `veil` starts
without the statistics; the runs themselves import veil.core.leak.
"""

from __future__ import annotations

from typing import Any

from veil.core.registry import register_reproducer
from veil.core.rows import Row, Shape

__all__ = ["cases", "rows_for", "reproduce_leak", "tests_what"]

# Negative controls that no setting of their system hides (the leakage table measures the
# defences leaking the same secrets): nothing can make them fail short of a blind attacker, so
# they are self-checks of the attacker, never counted as holding (veil.core.leak.rowchecks
# gives the others a flip: the defended setting that hides their secret).
UNHIDDEN_CONTROLS = {
    ("enclave", "os"): "a check of the attacker: no setting hides this secret (ex-l and sse leak it too: their rows "
                       "below), so no perturbation of the system can make the control fail",
    ("oram", "tamper"): "a check of the attacker: the service setting still leaks the reply timing on loopback (its "
                        "row below), so no perturbation of the system can make the control fail",
}

NEG_SOURCE = ("a negative control: this setting shows the attacker the secret directly, so the test must catch "
              "it (power at least 0.95, measured on seed-pair resamples)")


def cases(quick: bool) -> list[tuple[Any, str, str, str, int]]:
    """(observer, setting, a, b, size) over every system that has an observer."""
    import importlib

    from veil.core.leak.analyse import _systems_with_observers
    from veil.core.leak.observer import observers

    systems = _systems_with_observers()
    for system in systems:
        importlib.import_module(f"veil.{system}.observer")
    out = []
    for (system, _), obs in sorted(observers().items()):
        if system not in systems:
            continue  # a throw-away observer registered by a test
        size = obs.table_size or obs.default_size
        for setting, a, b in obs.table:
            out.append((obs, setting, a, b, size if quick else 4 * size))
    return out


def untabled() -> list[str]:
    """Observers that list no cases: named in the report, never guessed (the first two patterns
    of an observer may be a same-secret twin, not two secrets)."""
    from veil.core.leak.analyse import _systems_with_observers
    from veil.core.leak.observer import observers

    systems = _systems_with_observers()
    return [f"{s}.{n}" for (s, n), o in sorted(observers().items()) if s in systems and not o.table]


def tests_what(rep: dict[str, Any], setting_text: str = "") -> str:
    """What a case of the table tests, in a reader's words: a negative control, or the paper's
    claim that a defence hides the secret, or (neither) how much an undefended setting shows."""
    if rep["negative_control"]:
        return "negative control"
    what = f"{rep['setting']}" + (f" ({setting_text})" if setting_text else "")
    if rep.get("defence"):
        return f"the paper's claim that under {what} the attacker cannot tell {rep['a']} from {rep['b']}"
    return f"no claim: the paper does not claim that {what} hides this secret; the row shows what it reveals"


def rows_for(rep: dict[str, Any], setting_text: str = "") -> list[Row]:
    """The rows of one verdict: the smallest effect shown per family, and for a negative control
    the measured power, which must reach 0.95. Each row's note says what it tests."""
    tests = tests_what(rep, setting_text)
    base = f"leak/{rep['system']}/{rep['observer']}/{rep['setting']}/{rep['a']}-vs-{rep['b']}"
    cost = ", ".join(f"{k} {v:.4g}" for k, v in (rep.get("cost_a") or {}).items())
    rows = []
    for fam, f in rep["families"].items():
        det = f["detectable"]
        # A family that leaks has no smallest effect to state: planting into B only adds to a
        # difference already there, so its value is left out and the note gives p and power.
        rows.append(Row(f"{rep['system']}.{rep['observer']} {rep['setting']}: {rep['a']} vs {rep['b']}, {fam}",
                        None if f["leaks"] else det["effect"],
                        unit="effect", origin="measurement", key=f"{base}/{fam}",
                        note=f"tests: {tests}; {f['statement']}; p {f['p']:.3g}; classifier {f['classifier']['accuracy']:.2f}"
                             + (f"; cost per run: {cost}" if cost else "")))
    if rep["negative_control"]:
        best = max((f["power"] for f in rep["families"].values() if f["leaks"]), default=0.0)
        rows.append(Row(f"{rep['system']}.{rep['observer']} {rep['setting']}: {rep['a']} vs {rep['b']}, negative control caught",
                        best, unit="power", origin="measurement", key=f"{base}/power", shape=Shape(">=", 0.95),
                        source=NEG_SOURCE,
                        self_check=UNHIDDEN_CONTROLS.get((rep["system"], rep["observer"]), "")))
    return rows


@register_reproducer("leak", title="leak: one adversary for every system (leakage table)", order=90)
def reproduce_leak(ctx) -> None:
    from veil.core.leak.run import LeakConfig, execute

    ctx.text("Each system's attacker (docs/leak.md) tries to tell two secrets apart: exact aligned sign-flip "
             "tests over whole seed pairs per feature family, Holm over the families, alpha 0.001. A row's value "
             "is the smallest effect planted into pattern B's own observations that the test catches in 95% of "
             "plantings (a fraction of events redirected for spatial counts, a fraction added otherwise); a "
             "negative control must be caught with power at least 0.95.")
    grid, rows = [], []
    for obs, setting, a, b, size in cases(ctx.quick):
        cfg = LeakConfig(system=obs.system, observer=obs.name, setting=setting, a=a, b=b, size=size, seed=1)
        ctx.progress(f"{obs.system}.{obs.name} {setting}: {a} vs {b} ...")
        rep = execute(cfg, ctx.store, jobs=ctx.jobs, scheduler=ctx.scheduler)
        ctx.section.computed += 1
        rows += rows_for(rep, obs.settings.get(setting, ""))
        kind = tests_what(rep, obs.settings.get(setting, ""))
        for fam, f in rep["families"].items():
            grid.append([f"{obs.system}.{obs.name}", setting, kind, f"{a} vs {b}", fam, f["verdict"], f"{f['p']:.3g}",
                         f"{f['effect']:.3g}" if f["leaks"] else "—",
                         "—" if f["leaks"] or f["detectable"]["effect"] is None else f"{f['detectable']['effect']:g}",
                         f"{f['power']:.2f}", f"{f['classifier']['accuracy']:.2f} [{f['classifier']['ci95'][0]:.2f}, "
                         f"{f['classifier']['ci95'][1]:.2f}]",
                         ", ".join(f"{k} {v:.4g}" for k, v in (rep.get("cost_a") or {}).items())])
    missing = untabled()
    if missing:
        ctx.text("Observers that list no cases for this table (their `table`), not run here: "
                 + ", ".join(missing) + ". `veil leak` runs them.")
    ctx.grid("Leakage table", ["system.observer", "setting", "tests", "secrets", "family", "verdict", "p (Holm)", "effect seen",
                               "smallest effect shown", "power", "classifier [95% CI]", "defence cost (per run)"],
             grid)
    ctx.table("Negative controls and smallest effects shown", rows, name="verdicts")
