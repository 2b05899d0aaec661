"""Per-row evaluators of the leakage table's negative controls (veil.core.rowcheck, system
"leak"): a negative control's row ("the attacker catches this setting's secret with power at
least 0.95") holds because the undefended setting shows the secret. Run on a setting that hides
it, the same attacker catches nothing (power 0) and the row fails: the flip is that defended
setting, chosen where the leakage table itself measures it hiding the secret (docs/architecture.md,
"Shapes that can fail").
Controls that no setting of their system hides are self-checks of the attacker
(veil.core.leak_table.UNHIDDEN_CONTROLS), with no evaluator."""

from __future__ import annotations

from veil.core.leak_table import UNHIDDEN_CONTROLS, rows_for
from veil.core.rowcheck import ablation, register_row_check

REDUCED = ("nothing: the quick report's case (its size, 14 seed pairs, seed 1); a stored verdict is read back, "
           "so the nominal row is the report's own")
CASE = "leak.case"   # the pseudo-experiment whose field `setting` a flip overrides

# (system, observer, negative-control setting, a, b): the setting that hides the secret, and why
HIDDEN_BY = {
    ("memcrypt", "bus", "ecb"): ("direct-nospec", "AES direct mode without re-ordering or speculation: a line's "
                                 "ciphertext no longer follows its plaintext word by word, and no bitmap lines"),
    ("memnet", "channels", "minimal"): ("ghost_minimal", "ghost routing: each CPU injects towards a fresh random "
                                        "permutation of the modules, so the channels no longer show where misses go"),
    ("oram", "server", "plain"): ("pathoram", "Path ORAM: every request reads and writes one random root-to-leaf "
                                  "path, so the slots touched no longer follow the blocks asked for"),
}


def _control(system: str, observer: str, setting: str, a: str, b: str, size: int) -> None:
    defended, why = HIDDEN_BY[(system, observer, setting)]
    key = f"leak/{system}/{observer}/{setting}/{a}-vs-{b}/power"
    flip = ablation(f"{defended} in place of {setting}", {f"{CASE}.setting": defended}, what=why)

    @register_row_check("leak", f"{system}.{observer}.{setting}.{a}-vs-{b}", [key], reduced=REDUCED,
                        flips={key: flip}, ablations=[flip])
    def check(ctx) -> None:
        from veil.core.leak.run import LeakConfig, execute

        run_as = ctx.overrides.get(CASE, {}).get("setting", setting)
        cfg = LeakConfig(system=system, observer=observer, setting=run_as, a=a, b=b, size=size, seed=1)
        rep = execute(cfg, ctx.store, jobs=ctx.jobs)
        # the control's row, measured on what the (possibly defended) setting shows
        ctx.table("", rows_for({**rep, "setting": setting, "negative_control": True, "defence": False}),
                  name="verdicts")


def _declare() -> None:
    from veil.core.leak_table import cases

    for obs, setting, a, b, size in cases(quick=True):
        if setting in obs.leaky and (obs.system, obs.name) not in UNHIDDEN_CONTROLS:
            _control(obs.system, obs.name, setting, a, b, size)


_declare()
