"""Speed of the memcrypt timing model on one core: records per second of the model alone (the
records already in memory) and end to end from a veil-trace file (zstd decoding included), for
the heaviest scheme (AES-256 direct, ciphertext + MAC speculation, re-ordering), TDES, and the
unprotected machine as the same-run baseline."""

import json
import tempfile
import time
from pathlib import Path

from veil import _native
from veil.core import register_benchmark

RECORDS = 2_000_000


@register_benchmark("memcrypt", doc="timing-model records/s on one core (target >= 10 M)")
def bench(ctx) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = str(Path(d) / "bench.vtrace")
        synth = {"records": RECORDS, "footprint_lines": 1 << 16, "cache_lines": 4096, "run_lines": 8, "seed": 1}
        _native.memcrypt.write_synth_trace(path, 64, json.dumps(synth))
        model, e2e = {}, {}
        for name, cfg in [("plain", {"encryption": False}), ("tdes", {"cipher": "tdes"}), ("aes", {"cipher": "aes256"})]:
            run = json.dumps({"config": cfg, "trace": path})
            n, _read, secs = min((_native.memcrypt.time_model(run) for _ in range(2)), key=lambda x: x[2])
            model[name] = n / secs
            t0 = time.perf_counter()
            r = json.loads(_native.memcrypt.simulate(run))
            e2e[name] = r["records"] / (time.perf_counter() - t0)
    for name in ("aes", "tdes"):
        ctx.report(f"memcrypt/model_records_per_s_{name}", model[name], "records/s", baseline=model["plain"],
                   baseline_name="unprotected machine", target=">= 10e6 on one core")
    ctx.report("memcrypt/model_records_per_s_unprotected", model["plain"], "records/s")
    ctx.report("memcrypt/trace_records_per_s_aes", e2e["aes"], "records/s",
               target="bounded by zstd decoding of 89 bytes per record")
