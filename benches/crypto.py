"""Single-thread AES-CTR and AES-GCM of veil-crypto against OpenSSL (Python cryptography), same run."""

from veil import _native
from veil.core import register_benchmark
from veil.crypto.baseline import cryptography_gbps

SIZE = 256 * 1024
SECONDS = 1.0


@register_benchmark("crypto", doc="veil-crypto vs OpenSSL, 256 KB messages, one thread")
def bench(ctx) -> None:
    for engine, key, target in (("aes-128-ctr", "crypto/aes_ctr_gbps_1t", None),
                                ("aes-128-gcm", "crypto/aes_gcm_gbps_1t", ">= 0.8x cryptography"),
                                ("aes-256-gcm", "crypto/aes256_gcm_gbps_1t", None)):
        ours = float(_native.crypto.throughput(engine, SIZE, 1, SECONDS)["gb_per_s"])
        theirs = cryptography_gbps(engine, SIZE, SECONDS)
        ctx.report(key, ours, "GB/s", baseline=theirs, baseline_name="cryptography", target=target)
        if engine == "aes-128-gcm":
            ctx.results["crypto/aes_gcm_vs_cryptography"] = ours / theirs
