"""`veil oram init | serve | get`."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from veil.core import ConfigError, VeilError, register_cli

KB = 1024
MAX_ID = (1 << 64) - 1


def _size(text: str, flag: str = "--block-size") -> int:
    t = text.strip().upper().removesuffix("B")
    mult = {"K": KB, "M": KB * KB, "G": KB ** 3}.get(t[-1:], 1)
    try:
        f = float(t[:-1] if mult > 1 else t) * mult
    except ValueError:
        raise ConfigError(f"{flag} {text}: expected a number with optional K, M or G") from None
    if not f < 2**63:  # inf, nan and sizes no machine holds: one line, not an OverflowError
        raise ConfigError(f"{flag} {text}: must be a finite number below 2^63")
    v = int(f)
    if v <= 0:
        raise ConfigError(f"{flag} {text}: must be positive")
    return v


def _shuffle(name: str) -> None:
    """`--shuffle NAME` checked against the registry the experiments use (one list of names)."""
    import veil.oram.experiments  # noqa: F401  registers oram.shuffle
    from veil.core.registry import REGISTRY

    try:
        REGISTRY.component("oram.shuffle", name)
    except ConfigError as e:
        raise ConfigError(f"--shuffle: {e}") from None


def _redis(addr: str | None) -> str | None:
    """`--redis HOST:PORT` checked before any work: a bad port or an unknown host is bad input."""
    if addr is None:
        return None
    import socket

    host, sep, port = addr.rpartition(":")
    if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ConfigError(f"--redis {addr}: expected HOST:PORT with a port in 1..65535")
    try:
        socket.getaddrinfo(host.strip("[]"), int(port))
    except OSError as e:
        raise ConfigError(f"--redis {addr}: cannot resolve host {host!r} ({e.strerror or e})") from None
    return addr


def _native_call(fn, *a, **kw):
    try:
        return fn(*a, **kw)
    except (ValueError, KeyError) as e:
        raise ConfigError(str(e).strip("'\"")) from None
    except RuntimeError as e:
        raise VeilError(str(e)) from None


def _threads(n: int) -> int:
    if n < 0 or n > 1024:
        raise ConfigError(f"--threads {n}: must be in 0..1024 (0: one per core)")
    return n


def _port(p: int) -> int:
    if not 0 <= p <= 65535:
        raise ConfigError(f"--port {p}: must be in 0..65535")
    return p


def _writable_out(out: str) -> Path:
    p = Path(out)
    parent = p.parent if str(p.parent) else Path(".")
    if p.is_dir():
        raise ConfigError(f"--out {out}: is a directory")
    if not parent.is_dir():
        raise ConfigError(f"--out {out}: no such directory {parent}")
    if not os.access(parent, os.W_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise ConfigError(f"--out {out}: not writable")
    return p


def _check_new_dir(data: Path) -> None:
    if data.exists() and not data.is_dir():
        raise ConfigError(f"{data}: exists and is not a directory")
    if data.is_dir() and any(data.iterdir()):
        raise ConfigError(f"{data}: not empty (give a new or empty directory)")
    parent = data.parent if data.parent != Path("") else Path(".")
    if not data.exists() and not (parent.is_dir() and os.access(parent, os.W_OK)):
        raise ConfigError(f"{data}: cannot create it (parent missing or not writable)")


def cmd_init(args) -> int:
    from veil.oram.engine import native
    from veil.oram.server import find_key_file, make_token

    bs = _size(args.block_size)
    data = Path(args.data_dir)
    if args.blocks is not None and args.files:
        raise ConfigError("give FILES or --blocks, not both")
    if args.blocks is None and not args.files:
        raise ConfigError("nothing to store: give FILES or --blocks N")
    if args.blocks is not None and not 1 <= args.blocks <= 1 << 32:
        raise ConfigError(f"--blocks {args.blocks}: must be in 1..2^32")
    _threads(args.threads)
    _redis(args.redis)
    _shuffle(args.shuffle)
    for f in args.files:
        if not Path(f).is_file():
            raise ConfigError(f"{f}: not a readable file")
    _check_new_dir(data)
    key_file = find_key_file(args.key_file)
    if key_file and Path(key_file).exists():
        raise ConfigError(f"--key-file {key_file}: already exists (init makes a new key)")
    if args.token_file and Path(args.token_file).exists():
        raise ConfigError(f"--token-file {args.token_file}: already exists (init makes a new token)")
    if args.token_file and not Path(args.token_file).parent.is_dir():
        raise ConfigError(f"--token-file {args.token_file}: no such directory {Path(args.token_file).parent}")
    tls_dir = Path(args.tls_dir) if args.tls_dir else data
    if args.tls_dir:
        if not tls_dir.is_dir():
            raise ConfigError(f"--tls-dir {tls_dir}: no such directory")
        if any((tls_dir / f).exists() for f in ("tls.crt", "tls.key", "tls.fingerprint")):
            raise ConfigError(f"--tls-dir {tls_dir}: already holds a TLS identity")
    existed = data.exists()
    made_tls = False
    try:
        if args.blocks is not None:
            store = _native_call(native().Store.init, str(data), bs, n_blocks=args.blocks, seed=args.seed,
                                 threads=args.threads, redis=args.redis, key_file=key_file, shuffle=args.shuffle)
        else:
            store = _native_call(native().Store.init, str(data), bs, files=[str(Path(f)) for f in args.files],
                                 threads=args.threads, redis=args.redis, key_file=key_file, shuffle=args.shuffle)
        make_token(data, args.token_file)
        made_tls = True
        fp = _native_call(native().make_tls_identity, str(tls_dir))
    except BaseException:
        # a failed init leaves nothing behind: not the directory, not a key elsewhere
        if existed:
            for child in data.iterdir():
                shutil.rmtree(child) if child.is_dir() else child.unlink()
        else:
            shutil.rmtree(data, ignore_errors=True)
        if key_file:
            Path(key_file).unlink(missing_ok=True)
        if args.token_file and made_tls:
            Path(args.token_file).unlink(missing_ok=True)
        if args.tls_dir:
            for f in ("tls.crt", "tls.key", "tls.fingerprint"):
                (tls_dir / f).unlink(missing_ok=True)
        raise
    import json

    m = json.loads(store.manifest())
    print(f"initialised {data}: {m['n_blocks']} blocks of {bs} bytes"
          + (f" from {len(m['files'])} files" if m["files"] else " (synthetic)")
          + f", {m['shuffle']} shuffle"
          + f"; client token in {args.token_file or data / 'client.token'}; TLS key in {tls_dir / 'tls.key'};"
          + f" certificate SHA-256 {fp}")
    return 0


def cmd_serve(args) -> int:
    from veil.oram.engine import native
    from veil.oram.client import is_loopback
    from veil.oram.server import find_key_file, find_token, read_fingerprint

    data = Path(args.data_dir)
    _port(args.port)
    _threads(args.threads)
    if not data.is_dir():
        raise ConfigError(f"{data}: no such data directory (create one with 'veil oram init')")
    token = find_token(args.token_file, data)
    if args.log_level == "debug" and not args.unsafe_debug_log:
        raise ConfigError("--log-level debug logs the block id and slot of every failed storage check, which tells "
                          "whoever reads the log which blocks are asked for: add --unsafe-debug-log to accept that")
    if args.log_level == "debug":
        print("warning: --unsafe-debug-log: the log names requested blocks and their slots; keep it private",
              file=sys.stderr, flush=True)
    tls_dir = None
    scheme, note = "http", ""
    if args.insecure_plaintext and not is_loopback(args.host):
        raise ConfigError(f"--insecure-plaintext on --host {args.host}: only on a loopback address (without TLS one "
                          "observed handshake lets anyone test token guesses offline)")
    tls_home = Path(args.tls_dir) if args.tls_dir else data
    if args.insecure_plaintext:
        print("warning: --insecure-plaintext: replies are sealed and the token never sent, but block ids'"
              " timing, sizes and the session handshake travel without TLS", file=sys.stderr, flush=True)
    else:
        tls_dir = str(tls_home)
        scheme, note = "https", f" (certificate SHA-256 {read_fingerprint(tls_home)})"
    store = _native_call(native().Store.open, str(data), threads=args.threads,
                         key_file=find_key_file(args.key_file))

    import json

    shuffle = json.loads(store.manifest())["shuffle"]

    def ready(host, port):
        print(f"serving {data} on {scheme}://{host}:{port} with the {shuffle} shuffle{note}", flush=True)

    how = _native_call(store.serve_until_signal, token, ready, host=args.host, port=args.port, tls_dir=tls_dir,
                       link_mbps=args.link_mbps, latency_ms=args.latency_ms, log=args.log_level)
    if how == "interrupt":
        raise KeyboardInterrupt
    print("stopped (SIGTERM)", flush=True)
    return 0


def cmd_get(args) -> int:
    from veil.oram.client import OramClient
    from veil.oram.server import find_token, read_fingerprint

    if args.data_dir is not None and not Path(args.data_dir).is_dir():
        raise ConfigError(f"--data-dir {args.data_dir}: no such directory")
    if args.id is not None and not 0 <= args.id <= MAX_ID:
        raise ConfigError(f"block id {args.id}: must be in 0..2^64-1")
    if args.id is None and args.file is None:
        raise ConfigError("give a block ID or --file NAME")
    out = _writable_out(args.out) if args.out else None
    token = find_token(args.token_file, args.data_dir)
    fp = args.fingerprint
    if fp is None and args.data_dir is not None and args.url.startswith("https:"):
        fp = read_fingerprint(args.data_dir)
    c = OramClient(args.url, token, fingerprint=fp, insecure_plaintext=args.insecure_plaintext,
                   epoch_file=args.epoch_file)
    try:
        data = c.get_file(args.file) if args.file is not None else c.get(args.id)
    finally:
        c.close()
    if out is not None:
        out.write_bytes(data)
        print(f"wrote {len(data)} bytes to {out}")
    else:
        sys.stdout.buffer.write(data)
    return 0


@register_cli("oram")
def add_cli(subparsers) -> None:
    p = subparsers.add_parser("oram", help="PRO-ORAM store: init, serve, get")
    sub = p.add_subparsers(dest="oram_command", metavar="ACTION", parser_class=type(p))
    key_help = "the sealing key's file, e.g. on another volume (default $VEIL_ORAM_KEY_FILE or DATA_DIR/sealing.key)"

    s = sub.add_parser("init", help="create a store, its access token and TLS certificate")
    s.add_argument("data_dir", metavar="DATA_DIR")
    s.add_argument("files", nargs="*", metavar="FILES")
    s.add_argument("--block-size", required=True, help="block size B, e.g. 4096 or 256K")
    s.add_argument("--blocks", type=int, help="N synthetic blocks instead of files")
    s.add_argument("--seed", type=int, default=0, help="seed of the synthetic contents")
    s.add_argument("--threads", type=int, default=0, help="shuffle threads (0: one per core)")
    s.add_argument("--key-file", help=key_help)
    s.add_argument("--token-file", help="write the access token here (must not exist) instead of DATA_DIR/client.token")
    s.add_argument("--tls-dir", help="write tls.crt, tls.key and tls.fingerprint into this existing directory "
                   "instead of DATA_DIR")
    s.add_argument("--redis", metavar="HOST:PORT",
                   help="keep the untrusted slots in this Redis server instead of DATA_DIR")
    s.add_argument("--shuffle", default="clos",
                   help="the shuffle that builds each next epoch, kept with the store (registry oram.shuffle: "
                   "clos, PRO-ORAM's; cache, one-pass K-oblivious; see 'veil list')")
    s.set_defaults(handler=cmd_init)

    s = sub.add_parser("serve", help="serve a store over HTTPS (until Ctrl-C or SIGTERM)")
    s.add_argument("data_dir", metavar="DATA_DIR")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=8470)
    s.add_argument("--token-file", help="access token file (default $VEIL_ORAM_TOKEN or DATA_DIR/client.token)")
    s.add_argument("--key-file", help=key_help)
    s.add_argument("--tls-dir", help="where tls.crt and tls.key are (default DATA_DIR; see 'init --tls-dir')")
    s.add_argument("--insecure-plaintext", action="store_true",
                   help="serve plain HTTP instead of TLS, on a loopback address only (warns)")
    s.add_argument("--log-level", choices=("off", "info", "debug"), default="info",
                   help="info (default) names no block, slot or position; debug does and needs --unsafe-debug-log")
    s.add_argument("--unsafe-debug-log", action="store_true",
                   help="accept that --log-level debug reveals which blocks are requested (warns)")
    s.add_argument("--threads", type=int, default=0, help="shuffle threads (0: one per core)")
    s.add_argument("--link-mbps", type=float, default=0.0, help="emulate a link of this bandwidth (0: off)")
    s.add_argument("--latency-ms", type=float, default=0.0, help="emulated one-way latency per reply")
    s.set_defaults(handler=cmd_serve)

    s = sub.add_parser("get", help="fetch one block (or a whole file) from a server")
    s.add_argument("id", type=int, nargs="?", metavar="ID")
    s.add_argument("--file", help="fetch this stored file instead of one block")
    s.add_argument("--url", default="https://127.0.0.1:8470")
    s.add_argument("--fingerprint", help="the server certificate's SHA-256 (default: DATA_DIR/tls.fingerprint)")
    s.add_argument("--token-file", help="access token file (default $VEIL_ORAM_TOKEN or DATA_DIR/client.token)")
    s.add_argument("--data-dir", help="read the token and fingerprint from this store's directory")
    s.add_argument("--insecure-plaintext", action="store_true", help="allow an http:// URL")
    s.add_argument("--out", help="write here instead of stdout")
    s.add_argument("--epoch-file", help="keep the highest store epoch seen here; refuse a store behind it "
                   "(a rolled-back copy)")
    s.set_defaults(handler=cmd_get)

    def no_action(args) -> int:
        p.print_help()
        return 2

    p.set_defaults(handler=no_action)
