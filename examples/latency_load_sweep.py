"""Run a small sweep from Python and analyse it with pandas (docs/python.md).

    python examples/latency_load_sweep.py [STORE]

Uses the store at STORE (default $VEIL_STORE or .veil/results.sqlite); a second run reads every
point back from it instead of recomputing.
"""

import sys

import veil

store = sys.argv[1] if len(sys.argv) > 1 else None
SHORT = {"mode": "fixed", "warmup_cycles": 500, "measure_cycles": 2000, "k": 4}

# One point: a dict shaped like a config file, dotted overrides on top.
rec = veil.run({"experiment": "memnet.latency_load", **SHORT}, {"rate": 0.1}, store=store)
print(f"one point: {rec.result['avg_packet_latency']:.1f} cycles at rate 0.1 (config {rec.config_hash})")

# A sweep: a dict shaped like a sweep file (every point: base updated by one grid row), on two
# worker processes (they do not re-run this script: no `if __name__ == "__main__":` needed).
SPEC = {
    "experiment": "memnet.latency_load",
    "base": SHORT,
    "grid": {"topology": ["mesh", "torus"], "rate": [0.05, 0.1, 0.2]},
}
records = veil.sweep(SPEC, store=store, jobs=2)
print(f"sweep: {len(records)} points")

# The sweep's points as a DataFrame (not every stored point of the experiment, which a pivot
# would average): config keys and result fields are columns, units are in df.attrs["units"]
# and in the companion table st.units(...).
with veil.open_store(store) as st:
    df = st.dataframe(SPEC)
    units = st.units(SPEC)
table = df.pivot_table(index="rate", columns="topology", values="avg_packet_latency")
print(f"avg_packet_latency ({df.attrs['units']['avg_packet_latency']}):")
print(table.round(2).to_string())
print(units[units.column.isin(["avg_packet_latency", "accepted_flits_per_node_cycle"])]
      [["column", "unit"]].to_string(index=False))
