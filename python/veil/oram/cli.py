"""`veil oram init | serve | get`."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from veil.core import ConfigError, VeilError, register_cli

KB = 1024


def _size(text: str) -> int:
    t = text.strip().upper().removesuffix("B")
    mult = {"K": KB, "M": KB * KB, "G": KB ** 3}.get(t[-1:], 1)
    try:
        v = int(float(t[:-1] if mult > 1 else t) * mult)
    except ValueError:
        raise ConfigError(f"size {text!r}: expected a number with optional K, M or G") from None
    if v <= 0:
        raise ConfigError(f"size {text!r}: must be positive")
    return v


def _native_call(fn, *a, **kw):
    try:
        return fn(*a, **kw)
    except (ValueError, KeyError) as e:
        raise ConfigError(str(e).strip("'\"")) from None
    except RuntimeError as e:
        raise VeilError(str(e)) from None


def cmd_init(args) -> int:
    from veil.oram.engine import native
    from veil.oram.server import read_or_make_token

    bs = _size(args.block_size)
    data = Path(args.data_dir)
    if args.blocks is not None and args.files:
        raise ConfigError("give FILES or --blocks, not both")
    if args.blocks is None and not args.files:
        raise ConfigError("nothing to store: give FILES or --blocks N")
    for f in args.files:
        if not Path(f).is_file():
            raise ConfigError(f"{f}: not a readable file")
    if args.blocks is not None:
        store = _native_call(native().Store.init, str(data), bs, n_blocks=args.blocks, seed=args.seed,
                             threads=args.threads, redis=args.redis)
    else:
        store = _native_call(native().Store.init, str(data), bs, files=[str(Path(f)) for f in args.files],
                             threads=args.threads, redis=args.redis)
    read_or_make_token(data)
    import json

    m = json.loads(store.manifest())
    print(f"initialised {data}: {m['n_blocks']} blocks of {bs} bytes"
          + (f" from {len(m['files'])} files" if m["files"] else " (synthetic)")
          + f"; client token in {data / 'client.token'}")
    return 0


def cmd_serve(args) -> int:
    from veil.oram.engine import native
    from veil.oram.server import Link, read_or_make_token, serve

    data = Path(args.data_dir)
    if not data.is_dir():
        raise ConfigError(f"{data}: no such data directory (create one with 'veil oram init')")
    store = _native_call(native().Store.open, str(data), threads=args.threads)
    token = args.token or os.environ.get("VEIL_ORAM_TOKEN") or read_or_make_token(data)

    def ready(httpd):
        h, p = httpd.server_address[:2]
        print(f"serving {data} on http://{h}:{p}", flush=True)

    serve(store, token, args.host, args.port, Link(args.link_mbps, args.latency_ms), ready=ready)
    return 0


def cmd_get(args) -> int:
    from veil.oram.client import OramClient

    token = args.token or os.environ.get("VEIL_ORAM_TOKEN")
    if not token and args.data_dir:
        token = (Path(args.data_dir) / "client.token").read_text().strip()
    if not token:
        raise ConfigError("no access token: --token, $VEIL_ORAM_TOKEN or --data-dir")
    c = OramClient(args.url, token)
    try:
        if args.file is not None:
            data = c.get_file(args.file)
        elif args.id is not None:
            if args.id < 0:
                raise ConfigError(f"block id {args.id}: must be >= 0")
            data = c.get(args.id)
        else:
            raise ConfigError("give a block ID or --file NAME")
    finally:
        c.close()
    if args.out:
        Path(args.out).write_bytes(data)
        print(f"wrote {len(data)} bytes to {args.out}")
    else:
        sys.stdout.buffer.write(data)
    return 0


@register_cli("oram")
def add_cli(subparsers) -> None:
    p = subparsers.add_parser("oram", help="PRO-ORAM store: init, serve, get")
    sub = p.add_subparsers(dest="oram_command", metavar="ACTION", parser_class=type(p))

    s = sub.add_parser("init", help="create a store from files (chunked into blocks) or synthetic blocks")
    s.add_argument("data_dir", metavar="DATA_DIR")
    s.add_argument("files", nargs="*", metavar="FILES")
    s.add_argument("--block-size", required=True, help="block size B, e.g. 4096 or 256K")
    s.add_argument("--blocks", type=int, help="N synthetic blocks instead of files")
    s.add_argument("--seed", type=int, default=0, help="seed of the synthetic contents")
    s.add_argument("--threads", type=int, default=0, help="shuffle threads (0: one per core)")
    s.add_argument("--redis", metavar="HOST:PORT",
                   help="keep the untrusted slots in this Redis server instead of DATA_DIR")
    s.set_defaults(handler=cmd_init)

    s = sub.add_parser("serve", help="serve a store over HTTP")
    s.add_argument("data_dir", metavar="DATA_DIR")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=8470)
    s.add_argument("--token", help="access token (default $VEIL_ORAM_TOKEN or DATA_DIR/client.token)")
    s.add_argument("--threads", type=int, default=0, help="shuffle threads (0: one per core)")
    s.add_argument("--link-mbps", type=float, default=0.0, help="emulate a link of this bandwidth (0: off)")
    s.add_argument("--latency-ms", type=float, default=0.0, help="emulated one-way latency per reply")
    s.set_defaults(handler=cmd_serve)

    s = sub.add_parser("get", help="fetch one block (or a whole file) from a server")
    s.add_argument("id", type=int, nargs="?", metavar="ID")
    s.add_argument("--file", help="fetch this stored file instead of one block")
    s.add_argument("--url", default="http://127.0.0.1:8470")
    s.add_argument("--token")
    s.add_argument("--data-dir", help="read the token from DATA_DIR/client.token")
    s.add_argument("--out", help="write here instead of stdout")
    s.set_defaults(handler=cmd_get)

    def no_action(args) -> int:
        p.print_help()
        return 2

    p.set_defaults(handler=no_action)
