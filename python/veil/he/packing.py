"""Slot layouts for the server's linear layers: rotational redundancy and the masking baseline.

SEAL's BFV batching gives a ciphertext two rows of R = N/2 slots; `rotate_rows` rotates both
rows cyclically by the same step and `rotate_columns` swaps them. A layer's input channels are
laid out in *frames* (one image per frame, row-major) and a row holds one *window* of frames.

Convolution out[o] = sum_c sum_(dy,dx) w[o,c,dy,dx] * shift(in[c], dy, dx) needs two kinds of
window rotation: a pixel shift inside each frame, and a rotation by whole frames that brings
input channel (j+d) mod n under output channel j (the diagonal method; d = g*B + b is split
into baby steps b applied to the input and giant steps g*B applied to partial sums).

* Rotational redundancy (mode "rr"): each frame carries the layer's zero padding, so a pixel
  shift never leaves the frame for any output pixel, and the window of n frames cycles through
  nin = min(n, c_in) input channels with nin-1 wrapped copies after it (frame f holds channel
  f mod nin), so a rotation by up to nin-1 frames reads the right channel. Every rotation the
  server performs is one plain `rotate_rows`; there is no masking multiplication. Outputs are
  exact zeros outside their n frames, so several output ciphertexts fold into one reply.
* Masking baseline (mode "mask"): frames are the bare H x W images packed back to back, so a
  window rotation is emulated as rot(x, s)*M1 + rot(x, s - nF)*M2 and a pixel shift that reads
  outside the image is zeroed by a mask, the way windows are emulated without redundancy.

Both layouts use the two rows for two channel groups: the "direct" accumulator D pairs the
input group and the output group of the same row; the "cross" accumulator X pairs the input of
one row with the output group of the other and is moved there with one `rotate_columns`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from veil.core import ConfigError
from veil.he.layers import Conv, SumPool
from veil.he.params import HEParams

MODES = ("rr", "mask")


@dataclass
class LinearPlan:
    layer: Conv | SumPool
    params: HEParams
    mode: str
    R: int                   # slots per row
    hf: int                  # frame height / width / size (slots)
    wf: int
    F: int
    n: int                   # channels per window (per row)
    nframes: int             # frames laid out per row (n, or 2n-1 with redundancy)
    B: int                   # baby steps (frame rotations applied to the input)
    G: int                   # giant steps (frame rotations applied to partial sums)
    g_in: int                # channel groups in / out
    g_out: int
    in_cts: int
    out_cts: int
    offsets: list            # (dy, dx, linear step) per kernel tap
    out_pos: np.ndarray      # slot offsets of the output pixels inside a frame
    depthwise: bool = False  # SumPool: channel j stays in frame j
    merge: int = 1           # output ciphertexts folded into one before sending (rr only)
    nin: int = 0             # input channels cycled through a window (diagonals); n if 0
    _masks: dict = field(default_factory=dict, repr=False)     # cache of baseline masks

    def __post_init__(self):
        if not self.nin:
            self.nin = self.n

    @property
    def wire_out_cts(self) -> int:
        """Output ciphertexts actually sent back (after merging)."""
        return math.ceil(self.out_cts / self.merge)

    # ------------------------------------------------------------------ geometry helpers
    @property
    def ho(self) -> int:
        return self.layer.out_shape[1]

    @property
    def wo(self) -> int:
        return self.layer.out_shape[2]

    def in_group(self, ct: int, row: int) -> int | None:
        g = 2 * ct + row
        return g if g < self.g_in else None

    def out_group(self, ct: int, row: int) -> int | None:
        g = 2 * ct + row
        return g if g < self.g_out else None

    def frame_of(self, j: int | np.ndarray, g: int):
        """Frame that holds output channel j's partial sum before giant step g."""
        if self.mode == "rr":
            return j + g * self.B
        return (j + g * self.B) % self.n

    def uses_cross(self) -> bool:
        return any(self.out_group(e, 1 - r) is not None and self.in_group(a, r) is not None
                   for e in range(self.out_cts) for a in range(self.in_cts) for r in (0, 1))

    # ------------------------------------------------------------------ rotation steps
    def baby_steps(self) -> list[tuple[int, int, int, int]]:
        """(b, tap index, step, wrapped step or None) for every input rotation."""
        out = []
        for b in range(self.B):
            for t, (_, _, lin) in enumerate(self.offsets):
                s = b * self.F + lin
                wrap = (s - self.n * self.F if self.mode == "mask" and b > 0
                        and self.n * self.F != self.R else None)
                out.append((b, t, s, wrap))
        return out

    def galois_steps(self) -> set[int]:
        steps = set()
        for _, _, s, wrap in self.baby_steps():
            for x in (s, wrap):
                if x is not None and x % self.R:
                    steps.add(x % self.R)
        for g in range(1, self.G):
            steps.add((g * self.B * self.F) % self.R)
            if self.mode == "mask" and self.n * self.F != self.R:
                steps.add((g * self.B * self.F - self.n * self.F) % self.R)
        steps.discard(0)
        if not self.depthwise and self.uses_cross():
            steps.add(0)          # SEAL's convention: step 0 is the column (row-swap) key
        for sub in range(1, self.merge):
            steps.add((-sub * self.n * self.F) % self.R)
        return steps

    # ------------------------------------------------------------------ masks (baseline)
    def tap_valid(self, t: int) -> np.ndarray:
        """Which output pixels read inside the image for tap t (bare frames only)."""
        dy, dx, _ = self.offsets[t]
        p = self.layer.pad
        y = np.arange(self.ho)[:, None] + dy - p
        x = np.arange(self.wo)[None, :] + dx - p
        return ((y >= 0) & (y < self.layer.h) & (x >= 0) & (x < self.layer.w)).reshape(-1)

    def input_masks(self, b: int, t: int):
        """(full, M1, M2) for baby step (b, t) in the baseline. full: the plain rotation is
        already right on every output pixel (no mask); otherwise M1 / M2 select the slots taken
        from rot(x, s) / rot(x, s - nF), None where that part contributes nothing."""
        key = ("in", b, t)
        if key not in self._masks:
            valid = self.tap_valid(t)
            j = np.arange(self.n)
            whole_row = self.n * self.F == self.R      # window rotation is a row rotation
            full = bool(valid.all()) and (b == 0 or whole_row)
            lo = j if whole_row else j[j + b < self.n]
            m1 = None if full else self._frame_mask(lo, valid)
            m2 = (None if full or b == 0 or whole_row
                  else self._frame_mask(j[j + b >= self.n], valid))
            self._masks[key] = (full, m1, m2)
        return self._masks[key]

    def giant_masks(self, g: int) -> tuple[np.ndarray | None, np.ndarray | None]:
        key = ("giant", g)
        if key not in self._masks:
            allv = np.ones(self.ho * self.wo, dtype=bool)
            j = np.arange(self.n)
            shift = g * self.B
            if self.n * self.F == self.R:
                self._masks[key] = (None, None)      # the window is the whole row
            else:
                self._masks[key] = (self._frame_mask(j[j + shift < self.n], allv),
                                    self._frame_mask(j[j + shift >= self.n], allv))
        return self._masks[key]

    def _frame_mask(self, frames: np.ndarray, valid: np.ndarray) -> np.ndarray | None:
        if frames.size == 0 or not valid.any():
            return None
        m = np.zeros(self.params.slots, dtype=np.int64)
        pos = (frames[:, None] * self.F + self.out_pos[valid][None, :]).reshape(-1)
        m[pos] = 1
        m[self.R + pos] = 1
        return m

    # ------------------------------------------------------------------ client packing
    def pack(self, x: np.ndarray) -> list[np.ndarray]:
        """Slot vectors (length N) of the input ciphertexts for tensor x of layer.in_shape."""
        c_in = self.layer.in_shape[0]
        x = np.asarray(x, dtype=np.int64).reshape(self.layer.in_shape)
        p = self.layer.pad if (self.mode == "rr" and not self.depthwise) else 0
        frames = np.zeros((self.g_in * self.n, self.hf, self.wf), dtype=np.int64)
        frames[:c_in, p:p + x.shape[1], p:p + x.shape[2]] = x
        frames = frames.reshape(self.g_in, self.n, self.F)
        vecs = []
        for a in range(self.in_cts):
            v = np.zeros(self.params.slots, dtype=np.int64)
            for r in (0, 1):
                gi = self.in_group(a, r)
                if gi is None:
                    continue
                idx = np.arange(self.nframes) % self.nin
                v[r * self.R: r * self.R + self.nframes * self.F] = frames[gi][idx].reshape(-1)
            vecs.append(v)
        return vecs

    def unpack(self, vecs: list[np.ndarray]) -> np.ndarray:
        """Layer output (c_out, ho, wo) from the decoded output ciphertexts."""
        c_out = self.layer.out_shape[0]
        out = np.zeros((self.g_out * self.n, self.ho * self.wo), dtype=np.int64)
        span = self.n * self.F
        for w, v in enumerate(vecs):
            for sub in range(self.merge):
                e = w * self.merge + sub
                for r in (0, 1):
                    go = self.out_group(e, r) if e < self.out_cts else None
                    if go is None:
                        continue
                    base = r * self.R + sub * span
                    row = v[base: base + span].reshape(self.n, self.F)
                    out[go * self.n:(go + 1) * self.n] = row[:, self.out_pos]
        return out[:c_out].reshape(c_out, self.ho, self.wo)

    # ------------------------------------------------------------------ server weights
    def weight_blocks(self, wpad: np.ndarray, e: int, a: int, cross: bool, g: int):
        """Per row: (slot index array (n, P), weight values (B, taps, n)) for output ct e,
        input ct a, accumulator D (cross=False) or X, giant step g. Diagonals d >= n are zero."""
        j = np.arange(self.n)
        phi = self.frame_of(j, g)
        dys = np.array([o[0] for o in self.offsets])
        dxs = np.array([o[1] for o in self.offsets])
        out = []
        for r in (0, 1):
            gi = self.in_group(a, r)
            go = self.out_group(e, 1 - r if cross else r)
            if gi is None or go is None:
                continue
            idx = r * self.R + phi[:, None] * self.F + self.out_pos[None, :]
            vals = np.zeros((self.B, len(self.offsets), self.n), dtype=np.int64)
            co = go * self.n + j
            for b in range(self.B):
                d = g * self.B + b
                if d < self.nin:
                    ci = gi * self.n + (j + d) % self.nin
                    vals[b] = wpad[co[None, :], ci[None, :], dys[:, None], dxs[:, None]]
            out.append((idx, vals))
        return out

    def weight_nonzero(self, blocks) -> np.ndarray:
        nz = np.zeros((self.B, len(self.offsets)), dtype=bool)
        for _, vals in blocks:
            nz |= vals.any(axis=2)
        return nz

    def weight_vector(self, blocks, b: int, t: int) -> np.ndarray:
        v = np.zeros(self.params.slots, dtype=np.int64)
        for idx, vals in blocks:
            v[idx] = vals[b, t][:, None]
        return v

    def pad_weights(self, w: np.ndarray) -> np.ndarray:
        """Weights zero-padded to whole channel groups: (g_out*n, g_in*n, k, k)."""
        L = self.layer
        wp = np.zeros((self.g_out * self.n, self.g_in * self.n, L.k, L.k), dtype=np.int64)
        wp[:L.c_out, :L.c_in] = w
        return wp

    def bias_vector(self, bias: np.ndarray, e: int) -> np.ndarray:
        v = np.zeros(self.params.slots, dtype=np.int64)
        bp = np.zeros(self.g_out * self.n, dtype=np.int64)
        bp[:len(bias)] = bias
        for r in (0, 1):
            go = self.out_group(e, r)
            if go is None:
                continue
            idx = r * self.R + np.arange(self.n)[:, None] * self.F + self.out_pos[None, :]
            v[idx] = bp[go * self.n:(go + 1) * self.n, None]
        return v

    def rr_rotations(self) -> int:
        """Rotations of the redundant layout for this choice of B (closed form, used to pick B)."""
        cross = self.uses_cross()
        k2 = len(self.offsets)
        return (self.in_cts * (self.B * k2 - 1)
                + self.out_cts * ((self.G - 1) * (2 if cross else 1) + (1 if cross else 0))
                + self.out_cts - self.wire_out_cts)

    def probe_terms(self) -> int:
        """Products summed into one output slot, worst case (sets the noise probe's depth)."""
        if self.depthwise:
            return len(self.offsets)
        rows = 2 if self.uses_cross() else 1
        return self.in_cts * rows * min(self.nin, self.G * self.B) * len(self.offsets)


def plan_layer(layer, params: HEParams, mode: str = "rr", baby: int | None = None) -> LinearPlan:
    if mode not in MODES:
        raise ConfigError(f"mode: '{mode}' is not one of {list(MODES)}")
    R = params.row_slots
    if isinstance(layer, SumPool):
        hf, wf = layer.h, layer.w
        F = hf * wf
        if F > R:
            raise ConfigError(f"{layer.name}: a {hf}x{wf} frame does not fit a row of {R} slots "
                              f"at N={params.poly_degree}")
        n = min(layer.c, R // F)
        g = math.ceil(layer.c / n)
        offs = [(dy, dx, dy * wf + dx) for dy in range(layer.k) for dx in range(layer.k)]
        s = layer.stride
        out_pos = (np.arange(layer.out_shape[1])[:, None] * s * wf
                   + np.arange(layer.out_shape[2])[None, :] * s).reshape(-1)
        return LinearPlan(layer, params, mode, R, hf, wf, F, n, n, 1, 1, g, g,
                          math.ceil(g / 2), math.ceil(g / 2), offs, out_pos, depthwise=True)
    if mode == "rr":
        hf, wf = layer.h + 2 * layer.pad, layer.w + 2 * layer.pad
    else:
        hf, wf = layer.h, layer.w
    F = hf * wf
    if F > R:
        raise ConfigError(f"{layer.name}: a {hf}x{wf} frame does not fit a row of {R} slots at "
                          f"N={params.poly_degree}")
    want = max(layer.c_in, layer.c_out)
    if mode == "rr":
        # A window of n output channels cycles through nin = min(n, c_in) input channels: the
        # client lays out n + nin - 1 frames (frame f holds input channel f mod nin), so a
        # layer with few input channels needs few diagonals and little redundancy.
        n = min(want, R // F)
        while n > 1 and (n + min(n, layer.c_in) - 1) * F > R:
            n -= 1
        nin = min(n, layer.c_in)
        nframes = n + nin - 1
    else:
        n = max(1, min(R // F, want))
        nin = n
        nframes = n
    g_in, g_out = math.ceil(layer.c_in / n), math.ceil(layer.c_out / n)
    in_cts, out_cts = math.ceil(g_in / 2), math.ceil(g_out / 2)
    p = layer.pad
    if mode == "rr":
        offs = [(dy, dx, dy * wf + dx) for dy in range(layer.k) for dx in range(layer.k)]
    else:
        offs = [(dy, dx, (dy - p) * wf + (dx - p)) for dy in range(layer.k) for dx in range(layer.k)]
    out_pos = (np.arange(layer.out_shape[1])[:, None] * wf
               + np.arange(layer.out_shape[2])[None, :]).reshape(-1)

    # rr outputs are exact zeros outside their first n frames (the weights are zero there), so
    # the server folds several output ciphertexts into one with plain rotations: fewer
    # decryptions and fewer bytes back. The zeros are the redundancy that makes this mask-free.
    merge = max(1, min(out_cts, R // (n * F))) if mode == "rr" else 1

    def make(B):
        return LinearPlan(layer, params, mode, R, hf, wf, F, n, nframes, B, math.ceil(nin / B),
                          g_in, g_out, in_cts, out_cts, offs, out_pos, merge=merge, nin=nin)

    if baby is not None:
        return make(max(1, min(n, baby)))
    if mode == "mask":
        # Giant steps on partial sums would put a second mask after the weights (three
        # multiplicative levels); the baseline rotates inputs only, as a straightforward port does.
        return make(n)
    best = min(range(1, nin + 1), key=lambda B: (make(B).rr_rotations(), B))
    return make(best)


def network_plans(net, params: HEParams, mode: str = "rr") -> list[LinearPlan]:
    """The public layouts of a network: both sides derive them from (network, params, mode)."""
    return [plan_layer(st.layer, params, mode) for st in net.stages]
