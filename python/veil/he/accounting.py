"""Per-layer and per-inference operation counts, bytes and times."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

COUNT_FIELDS = ("encryptions", "decryptions", "encodes", "decodes", "rotations",
                "column_rotations", "weight_mults", "mask_mults", "additions", "ntt")


@dataclass
class Counts:
    encryptions: int = 0
    decryptions: int = 0
    encodes: int = 0
    decodes: int = 0
    rotations: int = 0           # rotate_rows (one key switch each)
    column_rotations: int = 0    # rotate_columns (row swap, one key switch)
    weight_mults: int = 0        # ciphertext x plaintext-weight products
    mask_mults: int = 0          # ciphertext x 0/1 mask products (baseline only)
    additions: int = 0
    ntt: int = 0                 # forward/inverse NTT conversions of whole ciphertexts
    bytes_up: int = 0            # client -> server, serialized and enveloped
    bytes_down: int = 0
    bytes_up_seeded: int = 0     # estimate with SEAL's seeded symmetric ciphertexts
    bytes_up_zlib: int = 0       # the same ciphertexts deflated, as SEAL's zlib mode would send
    bytes_down_zlib: int = 0     # (measured on the real bytes when enabled; 0 otherwise)
    client_s: float = 0.0        # client wall time (encode, encrypt, decrypt, decode, steps)
    client_enc_s: float = 0.0    # of which encode + encrypt + serialize
    client_dec_s: float = 0.0    # of which load + decrypt + decode
    server_s: float = 0.0        # server wall time for the layer (online part)
    seal_s: float = 0.0          # time inside SEAL calls (both sides, online)
    weight_prep_s: float = 0.0   # server: building and encoding weight plaintexts
    min_noise_budget: int = -1   # smallest invariant noise budget the client saw (bits)

    def add(self, other: "Counts") -> None:
        for f in fields(self):
            if f.name == "min_noise_budget":
                a, b = self.min_noise_budget, other.min_noise_budget
                self.min_noise_budget = b if a < 0 else (a if b < 0 else min(a, b))
            else:
                setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    @property
    def multiplications(self) -> int:
        return self.weight_mults + self.mask_mults

    @property
    def all_rotations(self) -> int:
        return self.rotations + self.column_rotations

    def to_dict(self) -> dict:
        d = asdict(self)
        d["multiplications"] = self.multiplications
        d["all_rotations"] = self.all_rotations
        return d


def total(per_layer: list[Counts]) -> Counts:
    t = Counts()
    for c in per_layer:
        t.add(c)
    return t
