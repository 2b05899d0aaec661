"""SEAL's client operations counted on the paper's ISA: instructions executed by SEAL's own
BFV public-key encryption and decryption compiled for 32-bit ARMv7, turned into Cortex-A7 time
with a cited issue model. The op-count model (`client.py`) stays beside it as a cross-check.

How the counts were made (2026-11-26; the client, the counting plugin and the script that rebuilds
the counts from SEAL's tag are in tools/seal-harness/):
SEAL v4.4.3 (commit 356f2e6d) cross-built with its own CMake for ARMv7 by Debian's
arm-linux-gnueabihf-g++ 12.2 (`-march=armv7-a -mtune=cortex-a7 -mfpu=neon-vfpv4 -mfloat-abi=hard
-marm`, Release, static library; SEAL's 128-bit integer, carry and multiply-high paths are
unavailable on ARMv7 (only __builtin_clzll is found), so it uses its generic 64-bit code, as on
the paper's board); a small static client makes
the context (CoeffModulus::Create with the bits below, PlainModulus::Batching(N, 20)), keys from a
fixed BLAKE2Xb seed, encrypts once and checks the plaintext decrypts, and runs nothing more
(`setup`), or then 10 `Encryptor::encrypt` calls or 10 `Decryptor::decrypt` calls (the setup's
encryption and check are inferred from the counts: without them a rebuilt setup run falls short
by one encryption plus one decryption); it runs under qemu-arm 7.2.22 with a
TCG plugin that counts every executed guest instruction by A32 class (multiplies: MUL/MLA and the
long UMULL/UMLAL/SMULL/SMLAL/UMAAL forms; loads/stores: LDR/STR, their halfword/doubleword forms,
LDM/STM, VFP/NEON loads/stores; branches: B/BL/BX/BLX; everything else ALU; rebuilt, the
split shows the runtime libraries' Thumb-2 branches and probably VFP loads/stores went to ALU,
tools/README.md). One operation =
(setup + 10 operations - setup) / 10. qemu models no caches: memory stalls are not in the counts.
"""

from __future__ import annotations

from veil.he.costmodel import IMX6_HZ

CLASSES = ("alu", "mul", "ldst", "branch", "total")
# label: (N, coefficient bits), and the counts of the three runs
COUNTS = {
    (4096, (36, 36, 37)): {
        "setup": (426557189, 12603325, 189700892, 38380602, 667242008),
        "enc10": (635888646, 49232454, 314571190, 52769691, 1052461981),
        "dec10": (484816143, 31753743, 232797061, 42143996, 791510943)},
    (8192, (43, 43, 44)): {
        "setup": (846927106, 24662691, 377092691, 76528351, 1325210839),
        "enc10": (1277549908, 101963455, 635728926, 106109188, 2121351477),
        "dec10": (967663579, 64731008, 467195794, 84245377, 1583835758)},
    (8192, (43, 43, 44, 44, 44)): {
        "setup": (1816801576, 46573386, 800499283, 165756661, 2829630906),
        "enc10": (2422758699, 178012745, 1182444093, 206352993, 3989568530),
        "dec10": (2037049903, 119799624, 967126655, 179052219, 3303028401)},
    (16384, (48, 48, 48, 49, 49, 49, 49, 49, 49)): {
        "setup": (9486278815, 199972983, 4124857859, 872523988, 14683633645),
        "enc10": (11452177899, 703755621, 5427980315, 999257339, 18583171174),
        "dec10": (10366432134, 493592139, 4805105383, 925347253, 16590476909)},
}
REPS = 10

# Cortex-A7 issue model: Hardwarebug (M. Rullgard), "Cortex-A7 instruction cycle timings", 2014,
# measured on a Cortex-A7 (the public TRM gives no timings): execution is in order; ALU and
# multiply instructions issue in 1 cycle, MOV and ADD-immediate dual-issue (1/2 cycle); MUL and
# the long multiplies have a 3-cycle result latency. Single issue: 1 cycle an instruction. The
# bracket: every ALU instruction dual-issued (low) to every multiply's latency exposed (high).
CPI_SOURCE = ("Hardwarebug, 'Cortex-A7 instruction cycle timings' (2014): one instruction per cycle (MOV/ADD-imm "
              "1/2), multiply latency 3")
MUL_LATENCY = 3


def per_op(n: int, bits: tuple[int, ...], op: str) -> dict[str, float] | None:
    """Instructions of one encryption (op 'enc') or decryption ('dec') by class; None where not counted."""
    c = COUNTS.get((n, tuple(bits)))
    if c is None:
        return None
    run = c[f"{op}10"]
    return {k: (run[i] - c["setup"][i]) / REPS for i, k in enumerate(CLASSES)}


def a7_seconds(ins: dict[str, float]) -> dict[str, float]:
    """Cortex-A7 seconds for counted instructions: single issue, and the issue model's bracket."""
    single = ins["total"]
    low = ins["total"] - ins["alu"] / 2
    high = ins["total"] + (MUL_LATENCY - 1) * ins["mul"]
    return {"s": single / IMX6_HZ, "low_s": low / IMX6_HZ, "high_s": high / IMX6_HZ}
