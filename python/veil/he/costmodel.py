"""Client time and energy models: the i.MX6 client, CHOCO-TACO, a HEAX-like partial
accelerator, Bluetooth, and local (TFLite-like) inference; plus published communication of
prior protocols.

Per-operation costs come from the TACO model (`veil.he.taco`): the i.MX6's encryption and
decryption priced from the datapath's counted operations, TACO's and the HEAX-like unit's from
the cycle and energy model at the selected design. Measured host times are scaled to the
i.MX6 by one ratio (the model's i.MX6 encryption over this host's SEAL encryption at the same
parameters). No paper result is an input here.
"""

from __future__ import annotations

from dataclasses import dataclass

# --- The paper's client and link (CHOCO-TACO, ASPLOS 2022, sections 5 and 6) -------------
IMX6_POWER_W = 0.2695          # NXP AN5345: average i.MX6 power running Dhrystone
IMX6_HZ = 528e6                # Cortex-A7
BT_BPS = 22e6                  # Bluetooth, [47] of the paper
BT_POWER_W = 0.010
# Local inference: TFLite int8 kernels on one Cortex-A7 core. Assumed 1 MAC per cycle
# (NEON 8-bit dot products retire several MACs per cycle at peak; ~1 effective after
# im2col/requantisation overheads). Configurable per experiment.
LOCAL_MACS_PER_CYCLE = 1.0


@dataclass(frozen=True)
class Accel:
    """Seconds and joules per encryption / decryption at one parameter set, from the TACO
    model (`veil.he.taco.client.accel_times`)."""
    imx6_enc_s: float
    imx6_dec_s: float
    taco_enc_s: float
    taco_enc_j: float
    taco_dec_s: float
    taco_dec_j: float
    heax_enc_s: float
    heax_dec_s: float

    @classmethod
    def from_dict(cls, d: dict) -> "Accel":
        return cls(**{k: float(d[k]) for k in cls.__dataclass_fields__})


@dataclass(frozen=True)
class ClientOps:
    """Per-inference client work, measured on this machine."""
    encryptions: int
    decryptions: int
    enc_s: float               # measured time of all encryptions (encode + encrypt + serialize)
    dec_s: float               # measured time of all decryptions (load + decrypt + decode)
    other_s: float             # measured packing, unpacking, ReLU, pooling, re-quantisation
    bytes_up: int
    bytes_down: int
    macs: int                  # of the whole network (for local inference)


def imx6_ratio(imx6_enc_s: float, host_enc_s: float) -> float:
    """How much slower the i.MX6 is than this host: the model's i.MX6 encryption time over
    this host's measured SEAL encryption at the same parameters, applied to every measured
    client operation."""
    return imx6_enc_s / host_enc_s


def client_breakdown(ops: ClientOps, ratio: float, acc: Accel) -> dict:
    """Client compute time (s) and energy (J) on the i.MX6 for software, HEAX-like and TACO."""
    enc, dec, other = ops.enc_s * ratio, ops.dec_s * ratio, ops.other_s * ratio
    out = {
        "sw": {"enc_s": enc, "dec_s": dec, "other_s": other},
        # HEAX-like: the same software with its NTT/dyadic steps in hardware
        "heax": {"enc_s": enc * acc.heax_enc_s / acc.imx6_enc_s,
                 "dec_s": dec * acc.heax_dec_s / acc.imx6_dec_s, "other_s": other},
        "taco": {"enc_s": ops.encryptions * acc.taco_enc_s, "dec_s": ops.decryptions * acc.taco_dec_s,
                 "other_s": other},
    }
    for name, d in out.items():
        d["total_s"] = d["enc_s"] + d["dec_s"] + d["other_s"]
        if name == "taco":
            d["energy_j"] = (ops.encryptions * acc.taco_enc_j + ops.decryptions * acc.taco_dec_j
                             + other * IMX6_POWER_W)
        else:
            d["energy_j"] = d["total_s"] * IMX6_POWER_W
    return out


def comm(bytes_total: int) -> dict:
    t = bytes_total * 8 / BT_BPS
    return {"time_s": t, "energy_j": t * BT_POWER_W}


def local_inference(macs: int, macs_per_cycle: float = LOCAL_MACS_PER_CYCLE) -> dict:
    t = macs / (macs_per_cycle * IMX6_HZ)
    return {"time_s": t, "energy_j": t * IMX6_POWER_W}


def end_to_end(ops: ClientOps, ratio: float, acc: Accel,
               macs_per_cycle: float = LOCAL_MACS_PER_CYCLE) -> dict:
    """CHOCO with TACO over Bluetooth against local inference (the paper's Fig. 12)."""
    cb = client_breakdown(ops, ratio, acc)["taco"]
    cm = comm(ops.bytes_up + ops.bytes_down)
    loc = local_inference(ops.macs, macs_per_cycle)
    return {"choco_time_s": cb["total_s"] + cm["time_s"],
            "choco_energy_j": cb["energy_j"] + cm["energy_j"],
            "choco_compute_s": cb["total_s"], "comm_s": cm["time_s"],
            "comm_energy_j": cm["energy_j"], "compute_energy_j": cb["energy_j"],
            "local_time_s": loc["time_s"], "local_energy_j": loc["energy_j"]}


# --- Published communication of prior protocols (single-image inference, MB) -------------
# Transcribed from the comparison tables of MiniONN (Liu et al., CCS 2017) and Gazelle
# (Juvekar et al., USENIX Security 2018, Tables 9 and 10); totals are offline + online.
# These were copied by hand from the papers' tables, not re-measured; check them against the
# sources before quoting.
PRIOR_PROTOCOLS = [
    # (protocol, dataset, network, MB, source)
    ("CryptoNets", "MNIST", "CryptoNets 5-layer", 372.2, "MiniONN CCS'17 Tab. 2; Gazelle Tab. 9"),
    ("DeepSecure", "MNIST", "DeepSecure CNN", 791.0, "Gazelle USENIX Sec'18 Tab. 9"),
    ("MiniONN", "MNIST", "MiniONN CNN (Gazelle's net D)", 657.5, "MiniONN CCS'17; Gazelle Tab. 9"),
    ("EzPC", "MNIST", "MiniONN CNN (Gazelle's net D)", 501.0, "Gazelle USENIX Sec'18 Tab. 9"),
    ("MiniONN", "CIFAR-10", "MiniONN 7-layer CNN", 9272.0, "MiniONN CCS'17; Gazelle Tab. 10"),
    ("Gazelle", "CIFAR-10", "MiniONN 7-layer CNN", 1236.0, "Gazelle USENIX Sec'18 Tab. 10"),
]
