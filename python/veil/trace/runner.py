"""Running programs under the veiltrace Valgrind tool and caching the traces.

The tool (tracer/, GPL-2.0) streams raw trace blocks into a pipe; `veil._native.trace.pack_fd`
reads them while the program runs and writes the compressed trace (LZ4 blocks) with the full header.
Traces of suite workloads are cached by (workload, size, threads, input hash, geometry, tool
version), so asking twice traces once: `ensure_trace("gzip", llc_bytes=256 * 1024)`.

Multi-threaded workloads are traced with `--stream=l1`: the tool streams each thread's L1
misses and victims, and `pack_fd` replays the shared LLC offline in a fixed interleaving (quanta
of `quantum` instructions), so their traces repeat byte for byte (docs/trace.md).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from veil.core import ConfigError, VeilError

from .format import FORMAT_VERSION
from .workloads import REPO, get_workload

TRACER_DIR = REPO / "tracer"
TOOL_LIB = TRACER_DIR / "build" / "lib"
TOOL_NAME = "veiltrace"
# Fixed, minimal environment: the environment is copied onto the program's stack, so the same
# environment is part of getting the same addresses, hence byte-identical traces. LD_BIND_NOW:
# the dynamic linker resolves every symbol at startup, in the first thread; resolved lazily, the
# first thread to call a function does the work, and which thread that is varies run to run.
RUN_ENV = {"PATH": "/usr/bin:/bin", "LC_ALL": "C", "PYTHONHASHSEED": "0", "LD_BIND_NOW": "1"}
# What the traced program sees of where Veil runs: nothing, for a suite workload. A program Veil
# built is named relative to the input folder (argv[0]); Valgrind's library folder is LIB_LINK, a
# link in the input folder, named through /proc/self/cwd. That keeps the strings Valgrind puts in
# the environment (VALGRIND_LIB, LD_PRELOAD) the same for every checkout and cache path, and
# absolute: the loader stores the working folder's path for a relatively named preload. Enters the
# cache key: traces made before this differ with the path.
CLIENT_PATHS = "relative to the input folder (v2)"
LIB_LINK = ".veil-valgrind-lib"
# How traces are stored: LZ4 blocks read about twice as fast as zstd's for 1.7x the disk
# (docs/trace.md, Speed). It enters the cache key with the format version.
PACK_CODEC = "lz4"


@dataclass(frozen=True)
class Geometry:
    """The cache the trace is filtered through (bytes, ways); lines are the same at every level."""
    l1_bytes: int = 8 * 1024
    l1_assoc: int = 1
    llc_bytes: int = 256 * 1024
    llc_assoc: int = 4
    line_size: int = 64
    ifetch: bool = True

    def __post_init__(self):
        ls = self.line_size
        if not (8 <= ls <= 64 and ls & (ls - 1) == 0):
            raise ConfigError(f"line_size: {ls} is not a power of two from 8 to 64")
        for name, size, ways in (("l1", self.l1_bytes, self.l1_assoc), ("llc", self.llc_bytes, self.llc_assoc)):
            if size <= 0 or ways <= 0 or size % (ways * ls):
                raise ConfigError(f"{name}: {size} bytes is not a whole number of sets of {ways} ways x {ls} B")
            sets = size // (ways * ls)
            if sets & (sets - 1):
                raise ConfigError(f"{name}: {size} bytes / ({ways} ways x {ls} B) = {sets} sets, not a power of two")

    def tool_args(self) -> list[str]:
        return [f"--l1-size={self.l1_bytes}", f"--l1-assoc={self.l1_assoc}", f"--llc-size={self.llc_bytes}",
                f"--llc-assoc={self.llc_assoc}", f"--line-size={self.line_size}",
                f"--ifetch={'yes' if self.ifetch else 'no'}"]

    def tag(self) -> str:
        return f"l1-{self.l1_bytes // 1024}k{self.l1_assoc}w-llc-{self.llc_bytes // 1024}k{self.llc_assoc}w-{self.line_size}b"


def parse_bytes(text: str, what: str) -> int:
    """'256KB', '1MB', '8K', '65536' -> bytes."""
    m = re.fullmatch(r"\s*(\d+)\s*([kKmMgG]?)(i?[bB])?\s*", str(text))
    if not m:
        raise ConfigError(f"{what}: '{text}' is not a size such as 256KB or 1MB")
    return int(m.group(1)) * {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[m.group(2).lower()]


# Wrappers that take away what differs between runs of the same program (docs/trace.md): a PID
# namespace (the thread ids glibc stores in memory start from 1) and no address randomisation
# (the vDSO's address reaches memory). The first that works here is used.
# A shell is the namespace's PID 1, not the tool: the kernel drops a signal with no handler sent to
# PID 1, so a program that kills itself (raise(SIGTERM), abort()) would leave Valgrind, which
# re-sends it to itself to die, panicking ("signal was supposed to be fatal"). The program is
# then PID 2, as fixed as 1 was. The shell exports PWD, the working folder's path, which would sit
# on the program's stack: `env -u PWD` takes it away again, so where the cache lives does not move
# the program's addresses.
_INIT = ["sh", "-c", '"$@"; exit $?', "sh", "env", "-u", "PWD"]
_ISOLATION = (["unshare", "--pid", "--fork", "--kill-child", *_INIT, "setarch", "-R"],
              ["unshare", "--user", "--map-root-user", "--pid", "--fork", "--kill-child", *_INIT, "setarch", "-R"],
              ["setarch", "-R"])
_isolation: list[str] | None = None


def isolation() -> list[str]:
    global _isolation
    if _isolation is None:
        _isolation = []
        for c in _ISOLATION:
            if shutil.which(c[0]) and subprocess.run([*c, "true"], capture_output=True).returncode == 0:
                _isolation = list(c)
                break
    return _isolation


def valgrind_path() -> str:
    path = shutil.which("valgrind")
    if path is None:
        raise VeilError("valgrind is not installed: install Debian's valgrind package "
                        "(apt-get install valgrind; `make trace-deps` does it as root)")
    # Debian's `valgrind` is a shell script that runs valgrind.bin beside it; being a shell, it
    # exports PWD into the program's environment. The binary itself adds nothing of the caller's.
    real = Path(path).with_name("valgrind.bin")
    return str(real) if real.is_file() and os.access(real, os.X_OK) else path


def _tool_source_digest() -> str:
    return hashlib.sha256((TRACER_DIR / "veiltrace.c").read_bytes()).hexdigest()[:12]


def _replay_source_digest() -> str:
    """The offline LLC replay is part of what makes a multi-threaded trace: its source enters the
    cache key too (where the checkout has it), beside its declared version."""
    src = REPO / "crates" / "veil-trace" / "src" / "replay.rs"
    return hashlib.sha256(src.read_bytes()).hexdigest()[:12] if src.is_file() else "?"


_built = False


def ensure_tool() -> Path:
    """Builds the tool with its Makefile when needed; returns the folder for VALGRIND_LIB."""
    global _built
    valgrind_path()
    if not (TRACER_DIR / "Makefile").is_file():
        raise VeilError(f"the tracer sources are not at {TRACER_DIR} (a Veil checkout is needed to trace)")
    if not _built:
        r = subprocess.run(["make", "-s", "-C", str(TRACER_DIR)], capture_output=True, text=True)
        if r.returncode:
            last = (r.stdout + r.stderr).strip().splitlines()[-1:] or ["?"]
            raise VeilError(f"building the veiltrace tool failed: {last[0]}")
        _built = True
    return TOOL_LIB


def tool_version(quantum: int | None = None) -> str:
    """Names the tool build: its version, the Valgrind it links, its source digest; for a
    replayed multi-threaded trace also the replay's version and quantum."""
    v = f"veiltrace 1.1 (valgrind {_valgrind_version()}) src {_tool_source_digest()}"
    if quantum is not None:
        from veil import _native
        v += f" + {_native.trace.REPLAY_VERSION} src {_replay_source_digest()} quantum {quantum}"
    return v


def check_quantum(quantum: int) -> int:
    if not isinstance(quantum, int) or isinstance(quantum, bool) or quantum < 1:
        raise ConfigError(f"quantum: {quantum!r} is not a positive number of instructions")
    return quantum


def _valgrind_version() -> str:
    out = subprocess.run([valgrind_path(), "--version"], capture_output=True, text=True).stdout.strip()
    return out.removeprefix("valgrind-")


def _check_writable(out: Path) -> None:
    from veil.core.paths import check_output_file

    # A scratch file, not permission bits: root may "write" /proc or a read-only mount by the bits.
    check_output_file(out, "--out")
    parent = out.parent if str(out.parent) else Path(".")
    if not parent.is_dir():
        raise ConfigError(f"--out: folder {parent} does not exist")


def run_trace(program: str, args: list[str], out: Path, geometry: Geometry, *, cwd: Path | None = None,
              header: dict | None = None, progress: Callable[[float, int], None] | None = None,
              quantum: int | None = None, lib_link: bool = False) -> dict:
    """Runs `program args` under the tool, writing the compressed trace to `out`; returns the
    summary (records, blocks, threads, the tool's per-thread stats). With `quantum`, the tool
    streams per-thread L1 events and the shared LLC is replayed offline in quanta of that many
    instructions (byte-identical traces of multi-threaded programs). A relative `program` is
    named from `cwd`; with `lib_link`, Valgrind's library folder is a link in `cwd` (LIB_LINK),
    so no path of this machine reaches the program's memory."""
    out = Path(out)
    if quantum is not None:
        check_quantum(quantum)
    _check_writable(out)
    lib = ensure_tool()
    exe = shutil.which(program) if os.sep not in program else program
    found = os.path.join(cwd, exe) if exe is not None and cwd is not None else exe
    if found is not None and os.path.isdir(found):
        raise ConfigError(f"program '{program}' is a directory, not an executable")
    if found is None or not os.access(found, os.X_OK):
        raise ConfigError(f"program '{program}' is not an executable or on PATH")
    if lib_link:
        if cwd is None:
            raise ValueError("lib_link needs the folder the program runs in")
        _link(Path(cwd) / LIB_LINK, lib)
    patch = {"program": Path(exe).name, "args": list(args), "tool_version": tool_version(quantum), **(header or {})}
    tmp = out.with_name(f".{out.name}.{os.getpid()}.part")
    rfd, wfd = os.pipe()
    stream = ["--stream=l1"] if quantum is not None else []
    cmd = [*isolation(), valgrind_path(), f"--tool={TOOL_NAME}", "-q", f"--out-fd={wfd}", *geometry.tool_args(), *stream,
           exe, *args]
    env = dict(RUN_ENV, VALGRIND_LIB=f"/proc/self/cwd/{LIB_LINK}" if lib_link else str(lib))
    with tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                    pass_fds=(wfd,), cwd=cwd, env=env)
        except OSError as e:
            os.close(rfd)
            raise VeilError(f"cannot start valgrind: {e}") from None
        finally:
            os.close(wfd)
        from veil import _native
        result: dict = {}

        finished = threading.Event()

        def pack():
            try:
                q = [quantum] if quantum is not None else []
                result["summary"] = json.loads(_native.trace.pack_fd(rfd, str(tmp), json.dumps(patch), *q, codec=PACK_CODEC))
            except (ValueError, OSError) as e:
                result["error"] = str(e)
            finally:
                finished.set()

        t0 = time.monotonic()
        worker = threading.Thread(target=pack, daemon=True)
        worker.start()
        # Waiting on an Event, not Thread.join(timeout): a Ctrl-C inside join() makes Python 3.11
        # mark the running thread as stopped, the later join() returns at once, and the packer,
        # still inside Rust, is torn down at exit ("FATAL: exception not rethrown", SIGABRT).
        try:
            while not finished.wait(1.0):
                if progress:
                    progress(time.monotonic() - t0, tmp.stat().st_size if tmp.exists() else 0)
            rc = proc.wait()
        except BaseException:
            proc.kill()  # --kill-child: the tool dies too, so the packer reads the end of the pipe
            proc.wait()
            finished.wait()
            tmp.unlink(missing_ok=True)
            raise
        err.seek(0)
        lines = [ln for ln in err.read().decode(errors="replace").splitlines() if ln.strip()]
    if rc != 0:
        tmp.unlink(missing_ok=True)
        why = lines[-1] if lines else "no message"
        if rc > 128 and lines == []:  # the shell reports a program killed by signal N as 128 + N
            import signal

            try:
                why = f"killed by {signal.Signals(rc - 128).name}"
            except ValueError:
                pass
        raise VeilError(f"{Path(exe).name} exited with status {rc} under valgrind: {why}")
    if "error" in result:
        tmp.unlink(missing_ok=True)
        raise VeilError(f"packing the trace of {Path(exe).name} failed: {result['error']}")
    if "threads" not in (header or {}):
        # A command's worker count is only known once it ran: the header gets the threads that
        # left records, so a consumer (memnet's one thread per CPU) can check it up front.
        set_header_threads(tmp, int(result["summary"].get("threads", 0)))
    tmp.replace(out)
    return result["summary"]


def set_header_threads(path: Path, threads: int) -> None:
    """Rewrites a trace's header with `threads` (blocks unchanged; the end frame's offset, the one
    absolute position the format stores, moves with the header's length)."""
    import struct

    from .format import MAGIC

    path = Path(path)
    tmp = path.with_name(path.name + ".hdr")
    with open(path, "rb") as f, open(tmp, "wb") as g:
        pre = f.read(16)
        if pre[:8] != MAGIC:
            raise VeilError(f"{path}: not a veil trace")
        version, hlen = struct.unpack("<II", pre[8:])
        header = json.loads(f.read(hlen))
        header["threads"] = int(threads)
        h = json.dumps(header, separators=(",", ":")).encode()
        g.write(MAGIC + struct.pack("<II", version, len(h)) + h)
        body_at = 16 + hlen
        total = path.stat().st_size
        left = total - body_at - 16
        while left > 0:
            chunk = f.read(min(left, 1 << 22))
            if not chunk:
                raise VeilError(f"{path}: truncated trace")
            g.write(chunk)
            left -= len(chunk)
        tail = f.read(16)
        (end_at,) = struct.unpack("<Q", tail[:8])
        g.write(struct.pack("<Q", end_at + len(h) - hlen) + tail[8:])
    tmp.replace(path)


def cache_dir() -> Path:
    """`$VEIL_TRACE_CACHE`, else the user's cache folder ($XDG_CACHE_HOME or ~/.cache, then
    veil/traces): shared by every clone on the machine, so a second checkout (CI's fresh clone, a
    worktree) does not trace the suite again. Sharing is safe because a trace's name covers
    everything that makes its bytes (`cache_key`), and one process at a time prepares and traces
    a workload (its lock file). Absolute: traced programs run with their input folder as working
    directory."""
    env = os.environ.get("VEIL_TRACE_CACHE")
    if env:
        return Path(env).resolve()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return (Path(base) / "veil" / "traces").resolve()


def cache_key(workload: str, size: str, threads: int, input_hash: str, geom: Geometry,
              quantum: int | None = None) -> str:
    """Names a cached trace: a new tool build, format version or storage codec gives a new name,
    so an old file is never served (it is traced again)."""
    key = json.dumps({"workload": workload, "size": size, "threads": threads, "input": input_hash,
                      "geometry": asdict(geom), "tool": tool_version(quantum), "paths": CLIENT_PATHS,
                      "format": f"v{FORMAT_VERSION} {PACK_CODEC}"}, sort_keys=True)
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def ensure_trace(workload: str, *, size: str = "small", threads: int | None = None,
                 llc_bytes: int = 256 * 1024, llc_assoc: int = 4, l1_bytes: int = 8 * 1024, l1_assoc: int = 1,
                 line_size: int = 64, ifetch: bool = True, cache: Path | None = None,
                 progress: Callable[[float, int], None] | None = None, quantum: int | None = None) -> Path:
    """The trace of a suite workload through the given caches, traced on first use and cached
    by (workload, size, threads, input hash, geometry, tool version). Multi-threaded workloads
    are replayed offline in quanta of `quantum` instructions (default: the replay's,
    `veil._native.trace.REPLAY_QUANTUM`); single-threaded ones use the tool's own LLC."""
    w = get_workload(workload)
    geom = Geometry(l1_bytes, l1_assoc, llc_bytes, llc_assoc, line_size, ifetch)
    if w.multithreaded:
        from veil import _native
        quantum = check_quantum(_native.trace.REPLAY_QUANTUM if quantum is None else quantum)
    elif quantum is not None:
        raise ConfigError(f"quantum: workload {workload} is single-threaded (its trace needs no replay)")
    root = Path(cache).resolve() if cache is not None else cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    # One process at a time prepares a workload's inputs and traces it: parallel sweep workers asking
    # for the same trace would otherwise rewrite the input files under each other's programs.
    with open(root / f".{workload}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _ensure_locked(w, workload, size, threads, geom, root, progress, quantum)


def _ensure_locked(w, workload: str, size: str, threads: int | None, geom: Geometry, root: Path,
                   progress: Callable[[float, int], None] | None, quantum: int | None) -> Path:
    workdir = root / "inputs" / workload
    inv = w.prepare(size, threads, workdir)
    t = w.threads if threads is None else threads
    digest = cache_key(workload, size, t, inv.input_hash, geom, quantum)
    out = root / f"{workload}-{size}-t{t}-{geom.tag()}-{digest}.vtrace"
    if out.exists():
        return out
    header = {"workload": workload, "input_hash": inv.input_hash, "threads": t,
              "extra": {"size": size, "input": w.sizes[size], "cache_key": digest}}
    # A program Veil built (under the cache) is named from the input folder, like its inputs.
    program = inv.program
    if Path(program).is_absolute() and Path(program).is_relative_to(root):
        program = os.path.relpath(program, workdir)
    run_trace(program, list(inv.args), out, geom, cwd=workdir, header=header, progress=progress, quantum=quantum,
              lib_link=True)
    return out


def _link(link: Path, target: Path) -> None:
    """`link` -> `target`, replaced if it points elsewhere (another checkout's tool)."""
    if link.is_symlink() and os.readlink(link) == str(target):
        return
    tmp = link.with_name(f"{link.name}.{os.getpid()}")
    tmp.unlink(missing_ok=True)
    os.symlink(target, tmp)
    os.replace(tmp, link)


def ensure_traces(requests: list[dict], jobs: int = 1) -> list[Path]:
    """`ensure_trace(**r)` for every request, on up to `jobs` threads at once (each trace is its
    own valgrind process, so threads suffice), paths in request order. Requests for the same
    workload still trace one at a time (its input folder is locked), so the queue takes one
    request of each workload in turn. A trace's bytes do not depend on what runs beside it
    (tests/trace: the same files from 1 and 2 threads). The first failure is raised once every
    started trace has ended."""
    if jobs <= 1 or len(requests) <= 1:
        return [ensure_trace(**r) for r in requests]
    from concurrent.futures import ThreadPoolExecutor

    by: dict[str, list[int]] = {}
    for i, r in enumerate(requests):
        by.setdefault(r["workload"], []).append(i)
    order = [idx[k] for k in range(max(len(v) for v in by.values())) for idx in by.values() if k < len(idx)]
    with ThreadPoolExecutor(max_workers=min(jobs, len(requests)), thread_name_prefix="veil-trace") as pool:
        futs = {i: pool.submit(ensure_trace, **requests[i]) for i in order}
    return [futs[i].result() for i in range(len(requests))]
