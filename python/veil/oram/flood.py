"""The unauthenticated-connection flood of `veil oram serve`'s starvation check: idle sockets
that send nothing and slowloris sockets that trickle a TLS record (or an HTTP header) one byte a
second, each reopened as soon as the server drops it, for a bounded time, from loopback
addresses only. Runs as its own process (`python -m veil.oram.flood`) so that its work does not
share an interpreter lock with the client being measured; prints one JSON line of counts.

The tests and `benches/oram_flood.py` start it next to a real client."""

from __future__ import annotations

import argparse
import errno
import ipaddress
import json
import os
import selectors
import socket
import sys
import time

# A TLS handshake record header announcing 512 bytes that never all come
TLS_TRICKLE_HEAD = b"\x16\x03\x01\x02\x00"
HTTP_TRICKLE_HEAD = b"POST /session HTTP/1.1\r\nHost: x\r\n"
MAX_REOPENS = 5_000_000


class Flood:
    def __init__(self, port: int, idle: int, loris: int, sources: list[str], tls: bool):
        for a in sources + ["127.0.0.1"]:
            if not ipaddress.ip_address(a).is_loopback:
                raise SystemExit(f"flood: {a} is not a loopback address")
        self.port, self.sources, self.tls = port, sources, tls
        self.sel = selectors.DefaultSelector()
        self.kinds = ["idle"] * idle + ["loris"] * loris
        self.opened = self.reopened = self.refused = 0
        self.socks: dict[int, tuple[socket.socket, int]] = {}

    def _open(self, k: int) -> None:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.bind((self.sources[k % len(self.sources)], 0))
            rc = s.connect_ex(("127.0.0.1", self.port))
        except OSError:
            rc = -1
        if rc not in (0, errno.EINPROGRESS):
            self.refused += 1
            s.close()
            self.pending.append(k)
            return
        self.opened += 1
        self.socks[s.fileno()] = (s, k)
        self.sel.register(s, selectors.EVENT_READ, k)
        if self.kinds[k] == "loris":
            self.fresh.append(s)

    def _drop(self, s: socket.socket, k: int) -> None:
        self.sel.unregister(s)
        self.socks.pop(s.fileno(), None)
        s.close()
        self.pending.append(k)

    def run(self, seconds: float) -> dict:
        self.pending: list[int] = list(range(len(self.kinds)))
        self.fresh: list[socket.socket] = []
        end = time.monotonic() + seconds
        next_trickle = time.monotonic() + 1.0
        while (now := time.monotonic()) < end and self.opened < MAX_REOPENS:
            todo, self.pending = self.pending, []
            for k in todo:
                self._open(k)
                self.reopened += 1
            for s in self.fresh:
                try:
                    s.send(TLS_TRICKLE_HEAD if self.tls else HTTP_TRICKLE_HEAD)
                except OSError:
                    pass
            self.fresh = []
            if now >= next_trickle:
                next_trickle = now + 1.0
                for s, k in list(self.socks.values()):
                    if self.kinds[k] == "loris":
                        try:
                            s.send(b"\x00" if self.tls else b"X-a: b\r\n")
                        except OSError:
                            pass
            for key, _ in self.sel.select(timeout=0.05 if not self.pending else 0):
                s = key.fileobj
                try:
                    gone = s.recv(4096) == b""
                except BlockingIOError:
                    gone = False
                except OSError:
                    gone = True
                if gone:
                    self._drop(s, key.data)
            if self.pending and len(self.pending) == len(self.kinds) and self.refused:
                time.sleep(0.01)  # nothing connects at all: do not spin on refusals
        held = len(self.socks)
        for s, _ in list(self.socks.values()):
            s.close()
        return {"opened": self.opened, "reopened": self.reopened - len(self.kinds), "refused": self.refused,
                "held_at_end": held}


def check_main(argv: list[str]) -> int:
    """`python -m veil.oram.flood check [--seconds 60]`: a 4 KB x 1024 store served over TLS on
    loopback, the full flood (1000 idle, 200 slowloris, 8 source addresses) beside a real client;
    prints the result and exits 1 if the client failed or its p99 more than doubled."""
    import tempfile

    from veil.oram.client import OramClient
    from veil.oram.engine import native

    p = argparse.ArgumentParser(prog="python -m veil.oram.flood check")
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--nice", type=int, default=0)
    a = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as d:
        store = native().Store.init(f"{d}/s", 4096, n_blocks=1024, seed=3, threads=2)
        fp = native().make_tls_identity(d)
        tok = os.urandom(16).hex()
        srv = store.serve(tok, tls_dir=d, log="off")
        try:
            r = starvation_check(lambda: OramClient(f"https://127.0.0.1:{srv.port}", tok, fingerprint=fp, timeout=30),
                                 srv.port, seconds=a.seconds, sources=SOURCES, nice=a.nice)
        finally:
            srv.stop()
    print(json.dumps(r, indent=1))
    ok = not r["failures"] and r["loaded_p99_ms"] <= 2 * r["unloaded_p99_ms"]
    print(f"{'ok' if ok else 'FAILED'}: p99 {r['unloaded_p99_ms']:.2f} -> {r['loaded_p99_ms']:.2f} ms "
          f"({r['loaded_p99_ms'] / r['unloaded_p99_ms']:.2f}x), {len(r['failures'])} failures, "
          f"{r['flood']['reopened']} flood sockets reopened")
    return 0 if ok else 1


#: The flood's source addresses: loopback, each in a /24 of its own (the server counts shares
#: per /24), and more of them than the unauthenticated budget can give their full share, so that
#: eviction is exercised too. The real client connects from 127.0.0.1, another /24.
SOURCES = ",".join(f"127.0.{i}.1" for i in range(2, 10))


def many_sources(n: int) -> str:
    """`n` (at most 65,280) loopback addresses, each in a /24 of its own and none in 127.0.0.0/24:
    the address-rich attacker, for whom grouping by network does not help."""
    if not 0 < n <= 255 * 256:
        raise ValueError(f"{n} sources: 1..{255 * 256}")
    return ",".join(f"127.{1 + k // 256}.{k % 256}.7" for k in range(n))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["check"]:
        return check_main(argv[1:])
    return flood_main(argv)


def flood_main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m veil.oram.flood")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--idle", type=int, default=1000)
    p.add_argument("--loris", type=int, default=200)
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--sources", default="127.0.0.2", help="comma-separated loopback source addresses")
    p.add_argument("--tls", action="store_true", help="trickle a TLS record rather than an HTTP header")
    p.add_argument("--nice", type=int, default=0, help="run at this niceness (0-19)")
    a = p.parse_args(argv)
    if a.nice:
        os.nice(max(0, min(19, a.nice)))
    if not 0 < a.seconds <= 600 or not 0 <= a.idle + a.loris <= 10_000:
        raise SystemExit("flood: --seconds in (0, 600], at most 10000 sockets")
    f = Flood(a.port, a.idle, a.loris, a.sources.split(","), a.tls)
    print("flooding", flush=True)
    print(json.dumps(f.run(a.seconds)), flush=True)
    return 0


def _reads(client_factory, seconds: float, reconnect_s: float = 2.0) -> dict:
    """Reads for `seconds`, opening a new client (TLS connection and key exchange) every
    `reconnect_s`: latencies in s, connect times, failures."""
    lat: list[float] = []
    connect_s: list[float] = []
    failures: list[str] = []
    stop = time.monotonic() + seconds
    i = 0
    while time.monotonic() < stop:
        t0 = time.perf_counter()
        try:
            c = client_factory()
        except Exception as e:  # noqa: BLE001 - every failure is the result, counted
            failures.append(f"connect: {e}")
            time.sleep(0.1)
            continue
        connect_s.append(time.perf_counter() - t0)
        with c:
            until = min(stop, time.monotonic() + reconnect_s)
            while time.monotonic() < until:
                t0 = time.perf_counter()
                try:
                    c.get(i % c.n_blocks)
                except Exception as e:  # noqa: BLE001
                    failures.append(f"read: {e}")
                    break
                lat.append(time.perf_counter() - t0)
                i += 1
    return {"lat": lat, "connect": connect_s, "failures": failures}


def starvation_check(client_factory, port: int, *, seconds: float, idle: int = 1000, loris: int = 200,
                     sources: str = "127.0.0.2", tls: bool = True, nice: int = 0) -> dict:
    """A real client reading for `seconds` without, then during, a flood of as long (reconnecting
    every 2 s in both phases, so both include key exchanges). p99 and p50 in ms, reads, connects
    and every failure during the flood."""
    import subprocess

    settle = min(1.0, seconds / 4)
    base = _reads(client_factory, seconds - settle)
    cmd = [sys.executable, "-m", "veil.oram.flood", "--port", str(port), "--idle", str(idle), "--loris", str(loris),
           "--seconds", str(seconds + 0.5), "--sources", sources, "--nice", str(nice)] + (["--tls"] if tls else [])
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "flooding"
        time.sleep(settle)  # let the flood fill every place first
        loaded = _reads(client_factory, seconds - settle)
    finally:
        out, _ = proc.communicate(timeout=seconds + 30)

    def q(xs, p):
        v = sorted(xs)
        return v[min(len(v) - 1, int(p * len(v)))] * 1e3 if v else float("inf")

    return {"unloaded_p99_ms": q(base["lat"], 0.99), "loaded_p99_ms": q(loaded["lat"], 0.99),
            "unloaded_p50_ms": q(base["lat"], 0.5), "loaded_p50_ms": q(loaded["lat"], 0.5),
            "unloaded_reads": len(base["lat"]), "reads": len(loaded["lat"]), "connects": len(loaded["connect"]),
            "max_connect_ms": max(loaded["connect"], default=0) * 1e3,
            "failures": base["failures"] + loaded["failures"], "flood": json.loads(out.strip().splitlines()[-1])}


if __name__ == "__main__":
    sys.exit(main())
