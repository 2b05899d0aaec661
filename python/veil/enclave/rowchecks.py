"""Per-row evaluators of enclave's shape rows (veil.core.rowcheck): Fig. 2's shapes from the
throughput points they read, at fewer requests than the report, each with the perturbation or
named ablation under which it fails (docs/enclave.md, Shapes that can fail)."""

from __future__ import annotations

from veil.core import Row
from veil.core.rowcheck import ablation, register_row_check
from veil.enclave import provenance as _provenance  # noqa: F401  (the assumptions the flips name)
from veil.enclave.reproduce import MODELS, POLICIES, WORKERS, _shape_rows

# 1000 requests in the report; 256 here: each worker still serves 4 or more requests at 64
# workers, and every predicate below compares throughputs whose ordering the reduction keeps (the
# evaluator's nominal verdicts are checked equal to the report's in tests/enclave).
REQUESTS = 256
REDUCED = (f"{REQUESTS} requests instead of 1000: at 64 workers each still serves 4; the shapes compare "
           "throughputs of the same request count, and the nominal verdicts are checked against the report's")
BLOCK = "fig2_throughput"

# A machine whose memory cannot feed 64 workers: one controller at 1.6 GB/s (half a DDR2-400
# channel) below the declared range (4-64 controllers at 3.2-12.8 GB/s).
STARVED = ablation("one starved memory controller", {"enclave.server.mem_controllers": 1,
                                                       "enclave.server.controller_gbps": 1.6},
                   what="memory bandwidth: every line goes through one 1.6 GB/s controller, below the "
                        "declared 4 controllers at 3.2 GB/s")
# The paper's SSE is a core of its own beside each enclave core; its speed is not stated (Veil: parity).
SLOW_SSE = ablation("an SSE at a third of an enclave core's speed", {"enclave.server.sse_cpi_factor": 3.0},
                    what="the SSE's speed parity with the enclave core: a small in-order SSE takes 3 cycles per "
                         "enclave-core cycle of system-call work")


def _points(ctx, models: list[str], workers: list[int], policies=tuple(POLICIES)) -> dict:
    """Throughputs keyed as the reproducer keys them; BL ignores the policy and runs once."""
    rows = [{"model": "bl", "policy": "sgx", "workers": w} for w in workers if "bl" in models]
    rows += [{"model": m, "policy": p, "workers": w} for p in policies for m in models if m != "bl" for w in workers]
    outs = ctx.run_many("enclave.server", {"requests": REQUESTS}, rows)
    return {(r["policy"] if r["model"] != "bl" else "any", r["model"], r["workers"]): o["throughput_krps"]
            for r, o in zip(rows, outs)}


def _tput(by: dict):
    def tput(p: str, m: str, w: int) -> float:
        return by[("any", "bl", w)] if m == "bl" else by[(p, m, w)]
    return tput


def _take(ctx, rows: list[Row], wanted: tuple[str, ...]) -> None:
    ctx.table("", [r for r in rows if any(w in r.label for w in wanted)], name=BLOCK)


def _k(what: str) -> list[str]:
    """The report's key of a Fig. 2 shape row per policy (a pattern: keys are cut at 60 characters)."""
    return [f"enclave/{BLOCK}/{p}_like_{what}*" for p in POLICIES]


SCALING = ("throughput, smallest gain per doubling", "SSE-HP throughput 64 / 32")


@register_row_check("enclave", "fig2_scaling",
                    _k("bl_throughput_smallest_gain")
                    + _k("ex_b_throughput_smallest_gain")
                    + [f"enclave/{p}/sse_hp_64w_over_32w" for p in POLICIES],
                    reduced=REDUCED,
                    flips={**{k: STARVED for k in _k("bl_throughput_smallest_gain")
                              + _k("ex_b_throughput_smallest_gain")},
                           **{f"enclave/{p}/sse_hp_64w_over_32w": STARVED for p in POLICIES}},
                    ablations=[STARVED, SLOW_SSE])
def fig2_scaling(ctx) -> None:
    """BL and EX-B scale 4 -> 64, SSE-HP gains from 32 to 64: BL and EX-B at every worker count,
    SSE-HP at 32 and 64 (the other models' points are not run: the rows do not read them)."""
    by = _points(ctx, ["bl", "ex-b"], WORKERS)
    by.update(_points(ctx, ["sse-hp"], [32, 64]))
    by.update({(p, m, w): 1.0 for p in POLICIES for m in MODELS[1:] for w in WORKERS if (p, m, w) not in by})
    _take(ctx, _shape_rows(_tput(by)), SCALING)


def _up_to_32(policy: str, flip) -> None:
    # EX-L within 10% of BL up to 32 workers fails as it stands (a finding): no evaluator is owed
    keys = [f"enclave/{BLOCK}/{policy}_like_sse_vs_ex_l_largest_difference*"]

    @register_row_check("enclave", f"fig2_up_to_32_{policy}", keys, reduced=REDUCED, flips={keys[0]: flip},
                        ablations=[STARVED, SLOW_SSE])
    def check(ctx) -> None:
        """SSE behaves as EX-L up to 32 workers: those models at 4-32 workers."""
        small = [w for w in WORKERS if w <= 32]
        by = _points(ctx, ["ex-l", "sse-nhp", "sse-hp"], small, (policy,))
        by.update({("any", "bl", w): 1.0 for w in WORKERS})
        by.update({(p, m, w): 1.0 for p in POLICIES for m in MODELS[1:] for w in WORKERS if (p, m, w) not in by})
        _take(ctx, [r for r in _shape_rows(_tput(by)) if r.label.startswith(POLICIES[policy])],
              ("SSE vs EX-L",))


# SGX-like, SSE equal to EX-L is fragile within the declared ranges (clients on the chip, placed as
# Linux places a woken thread); SEV-like, where few calls leave the guest, only a slower SSE
# separates them (placement leaves them 0.03 apart there)
_up_to_32("sgx", ("enclave.placement", "wake-affine"))
_up_to_32("sev", SLOW_SSE)
