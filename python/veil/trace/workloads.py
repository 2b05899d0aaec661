"""The workload suite: real programs with deterministic inputs generated here (no downloads).

Two families:
- `spec`: SPEC CPU-like single-threaded programs (memcrypt): Debian's gzip, bzip2, xz, gcc's
  cc1, python3, sqlite3, and in-repo kernels standing in for 181.mcf (network simplex) and 172.mgrid.
- `splash`: SPLASH-2/PARSEC-like multi-threaded kernels (memnet), written in-repo from the
  published algorithms (workloads/src/*.c, each citing its source).

`prepare(workdir)` writes a workload's input files into `workdir` and returns the program and
its arguments (file names relative to `workdir`, so the path of the cache never enters the
program's memory and traces stay byte-identical wherever they are made).
"""

from __future__ import annotations

import hashlib
import random
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from veil.core import ConfigError, VeilError

REPO = Path(__file__).resolve().parents[3]
SRC = REPO / "workloads" / "src"
SCRIPTS = REPO / "workloads" / "scripts"
SIZES = ("small", "medium")


@dataclass(frozen=True)
class Invocation:
    program: str          # absolute path of the executable
    args: tuple[str, ...]
    input_hash: str       # sha256 over the program's identity, arguments and input files


@dataclass(frozen=True)
class Workload:
    name: str
    family: str                      # spec | splash
    stands_for: str                  # what it stands in for
    source: str                      # the algorithm's or program's source (citation)
    sizes: dict[str, str]            # size -> one-line description of the input
    threads: int = 1                 # default worker threads (splash)
    multithreaded: bool = False
    _prepare: Callable[[str, int, Path], tuple[str, list[str], list[Path]]] = field(repr=False, default=None)

    def prepare(self, size: str, threads: int | None, workdir: Path) -> Invocation:
        if size not in self.sizes:
            raise ConfigError(f"size: '{size}' is not one of {', '.join(self.sizes)} for workload {self.name}")
        t = self.threads if threads is None else threads
        if not self.multithreaded and t != 1:
            raise ConfigError(f"threads: workload {self.name} is single-threaded")
        if self.multithreaded and not 1 <= t <= 64:
            raise ConfigError(f"threads: {t} is not in 1..64")
        workdir.mkdir(parents=True, exist_ok=True)
        program, args, inputs = self._prepare(size, t, workdir)
        h = hashlib.sha256()
        h.update(f"{self.name}\0{size}\0{t}\0{Path(program).name}\0".encode())
        h.update("\0".join(args).encode())
        for p in inputs:
            h.update(hashlib.sha256(p.read_bytes()).digest())
        return Invocation(program, tuple(args), h.hexdigest())


WORKLOADS: dict[str, Workload] = {}


def _register(w: Workload) -> None:
    WORKLOADS[w.name] = w


def get_workload(name: str) -> Workload:
    try:
        return WORKLOADS[name]
    except KeyError:
        raise ConfigError(f"unknown workload '{name}'; known: {', '.join(sorted(WORKLOADS))}") from None


def _system_program(name: str) -> str:
    path = shutil.which(name, path="/usr/bin:/bin")
    if path is None:
        raise VeilError(f"{name} is not installed (Debian package; `make trace-deps` installs it as root)")
    return path


# ---------------------------------------------------------------- generated inputs

_SYLLABLES = ["the", "an", "of", "ing", "re", "con", "al", "ter", "pro", "ed", "er", "ly", "ment", "tion",
              "ex", "com", "in", "st", "ou", "ar", "ca", "de", "mo", "si", "la", "ne", "po", "ri"]


def corpus(nbytes: int, seed: int) -> bytes:
    """Deterministic compressible input: Zipf-distributed pseudo-words in lines (3/4) and
    fixed-width numeric records (1/4), like a mix of text and table data."""
    rng = random.Random(seed)
    vocab = ["".join(rng.choice(_SYLLABLES) for _ in range(1 + rng.randrange(4))) for _ in range(4000)]
    weights = [1.0 / (r + 1) for r in range(len(vocab))]
    out: list[bytes] = []
    size = 0
    while size < nbytes:
        if rng.random() < 0.75:
            words = rng.choices(vocab, weights, k=400)
            lines = [" ".join(words[i:i + 12]).capitalize() + "." for i in range(0, 400, 12)]
            chunk = ("\n".join(lines) + "\n").encode()
        else:
            base = rng.randrange(1 << 20)
            chunk = "".join(f"{base + i:08d},{rng.randrange(1000):4d},{rng.random():.6f}\n"
                            for i in range(100)).encode()
        out.append(chunk)
        size += len(chunk)
    return b"".join(out)[:nbytes]


def _write(path: Path, data: bytes) -> Path:
    if not path.exists() or path.read_bytes() != data:
        path.write_bytes(data)
    return path


def _compressor(prog: str, flags: list[str], small: int, medium: int):
    def prepare(size: str, threads: int, wd: Path):
        n = small if size == "small" else medium
        f = _write(wd / f"input-{n}.dat", corpus(n, seed=1))
        return _system_program(prog), [*flags, "-c", f.name], [f]
    return prepare


KIB, MIB = 1024, 1024 * 1024

_register(Workload("gzip", "spec", "164.gzip (compression)", "GNU gzip (Debian package), -6 -n",
                   {"small": "1 MiB generated text+records", "medium": "8 MiB"},
                   _prepare=_compressor("gzip", ["-6", "-n"], 1 * MIB, 8 * MIB)))
_register(Workload("bzip2", "spec", "256.bzip2 (compression)", "bzip2 (Debian package), -9",
                   {"small": "512 KiB generated text+records", "medium": "4 MiB"},
                   _prepare=_compressor("bzip2", ["-9"], 512 * KIB, 4 * MIB)))
_register(Workload("xz", "spec", "compression with a large dictionary (657.xz_s in CPU2017)",
                   "XZ Utils (Debian package), -6 (8 MiB dictionary)",
                   {"small": "512 KiB generated text+records", "medium": "4 MiB"},
                   _prepare=_compressor("xz", ["-6", "-T1"], 512 * KIB, 4 * MIB)))


def _cc1(size: str, threads: int, wd: Path):
    gcc = _system_program("gcc")
    cc1 = subprocess.run([gcc, "-print-prog-name=cc1"], capture_output=True, text=True).stdout.strip()
    if not Path(cc1).is_file():
        raise VeilError("gcc's cc1 was not found (gcc -print-prog-name=cc1)")
    src = SRC / ("radix.c" if size == "small" else "mgrid.c")
    pre = subprocess.run([gcc, "-E", "-P", "-I", str(SRC), str(src)], capture_output=True)
    if pre.returncode:
        raise VeilError(f"gcc -E {src.name} failed: {pre.stderr.decode().strip().splitlines()[-1:]}")
    f = _write(wd / f"cc1-{src.stem}.i", pre.stdout)
    return cc1, ["-quiet", "-O2", f.name, "-o", "/dev/null"], [f]


_register(Workload("cc1", "spec", "176.gcc (compiler)", "gcc 12's cc1 (Debian package) at -O2 on an in-repo kernel, preprocessed",
                   {"small": "workloads/src/radix.c", "medium": "workloads/src/mgrid.c"}, _prepare=_cc1))


def _python(size: str, threads: int, wd: Path):
    n = 20000 if size == "small" else 200000
    f = _write(wd / "dicts.py", (SCRIPTS / "dicts.py").read_bytes())
    return _system_program("python3"), ["-S", "-s", f.name, str(n)], [f]


_register(Workload("python", "spec", "253.perlbmk / interpreters (object-heavy heap)",
                   "CPython 3.11 (Debian package) on workloads/scripts/dicts.py",
                   {"small": "20,000 records", "medium": "200,000 records"}, _prepare=_python))


def _sqlite(size: str, threads: int, wd: Path):
    rows = 20000 if size == "small" else 200000
    sql = subprocess.run([sys.executable, str(SCRIPTS / "queries.py"), str(rows)], capture_output=True, check=True).stdout
    f = _write(wd / f"queries-{rows}.sql", sql)
    return _system_program("sqlite3"), [":memory:", f".read {f.name}"], [f]


_register(Workload("sqlite", "spec", "a database (no SPEC2000 counterpart; as in CPU2017's mix of server codes)",
                   "SQLite 3.40 shell (Debian package) on the query mix of workloads/scripts/queries.py",
                   {"small": "20,000 orders", "medium": "200,000 orders"}, _prepare=_sqlite))


# ---------------------------------------------------------------- in-repo kernels

def build_kernel(name: str, bin_dir: Path) -> Path:
    """Compiles workloads/src/NAME.c (gcc -O2) once per source content."""
    src = SRC / f"{name}.c"
    digest = hashlib.sha256(src.read_bytes() + (SRC / "common.h").read_bytes()).hexdigest()[:16]
    out = bin_dir / f"{name}-{digest}"
    if out.exists():
        return out
    bin_dir.mkdir(parents=True, exist_ok=True)
    gcc = _system_program("gcc")
    tmp = out.with_suffix(".tmp")
    # The checkout's path stays out of the binary (its debug information), so every clone builds
    # the same bytes.
    r = subprocess.run([gcc, "-O2", "-g", "-pthread", f"-ffile-prefix-map={SRC}=workloads/src", "-o", str(tmp),
                        str(src), "-lm"], capture_output=True, text=True)
    if r.returncode:
        raise VeilError(f"building {src.name} failed: {r.stderr.strip().splitlines()[-1:]}")
    tmp.replace(out)
    return out


def _kernel_source_hash_input(name: str) -> list[Path]:
    return [SRC / f"{name}.c", SRC / "common.h"]


def _kernel_workload(name, family, stands_for, source, sizes, args, threads=1, mt=False):
    def prepare(size: str, t: int, wd: Path):
        exe = build_kernel(name, wd.parent / "bin")
        # The source, not the binary, names the input: the same source gives the same program.
        return str(exe), args[size](t), _kernel_source_hash_input(name)
    _register(Workload(name, family, stands_for, source, sizes, threads, mt, _prepare=prepare))


_kernel_workload("mcf", "spec", "181.mcf (network simplex: pointer chasing over a large network)",
                 "primal network simplex with multiple partial pricing and a strongly feasible tree, "
                 "Löbel, ZIB SC-96-7 (1996); Ahuja, Magnanti & Orlin, Network Flows (1993) ch. 11",
                 {"small": "4,000 nodes, 4 arcs each, 30 units", "medium": "12,000 nodes, 4 arcs each, 60 units"},
                 {"small": lambda t: ["4000", "4", "30"], "medium": lambda t: ["12000", "4", "60"]})
_kernel_workload("mgrid", "spec", "172.mgrid (3-D multigrid stencils)",
                 "V-cycle multigrid, Briggs, Henson & McCormick, A Multigrid Tutorial (2000)",
                 {"small": "32^3 grid, 3 V-cycles", "medium": "64^3 grid, 4 V-cycles"},
                 {"small": lambda t: ["5", "3"], "medium": lambda t: ["6", "4"]})
_kernel_workload("fft", "splash", "SPLASH-2 FFT", "six-step FFT, Bailey (1990); Woo et al. ISCA 1995",
                 {"small": "2^14 complex points", "medium": "2^18 complex points"},
                 {"small": lambda t: ["14", str(t)], "medium": lambda t: ["18", str(t)]}, threads=4, mt=True)
_kernel_workload("radix", "splash", "SPLASH-2 RADIX", "parallel LSD radix sort, Blelloch et al. SPAA 1991; Woo et al. ISCA 1995",
                 {"small": "2^18 32-bit keys, radix 2^8", "medium": "2^21 keys"},
                 {"small": lambda t: [str(1 << 18), str(t), "8"], "medium": lambda t: [str(1 << 21), str(t), "8"]},
                 threads=4, mt=True)
_kernel_workload("lu", "splash", "SPLASH-2 LU (non-contiguous blocks)",
                 "blocked right-looking LU, 2-D scatter; Woo et al. ISCA 1995; Golub & Van Loan sec. 3.2",
                 {"small": "128x128, 16x16 blocks", "medium": "384x384, 16x16 blocks"},
                 {"small": lambda t: ["128", str(t), "16"], "medium": lambda t: ["384", str(t), "16"]},
                 threads=4, mt=True)
_kernel_workload("ocean", "splash", "SPLASH-2 OCEAN (its red-black relaxation)",
                 "red-black SOR, Briggs et al. (2000) ch. 2; Woo et al. ISCA 1995",
                 {"small": "130x130 grid, 10 sweeps", "medium": "514x514 grid, 10 sweeps"},
                 {"small": lambda t: ["130", str(t), "10"], "medium": lambda t: ["514", str(t), "10"]},
                 threads=4, mt=True)
_kernel_workload("blackscholes", "splash", "PARSEC blackscholes",
                 "Black & Scholes (1973) closed form; Abramowitz & Stegun 26.2.17; Bienia et al. PACT 2008",
                 {"small": "16,384 options, 2 rounds", "medium": "262,144 options, 2 rounds"},
                 {"small": lambda t: ["16384", str(t), "2"], "medium": lambda t: ["262144", str(t), "2"]},
                 threads=4, mt=True)
_kernel_workload("streamcluster", "splash", "PARSEC streamcluster",
                 "facility-location local search, O'Callaghan et al. ICDE 2002; Bienia et al. PACT 2008",
                 {"small": "4,096 points x 32 dims, 100 rounds", "medium": "32,768 points x 32 dims, 200 rounds"},
                 {"small": lambda t: ["4096", str(t), "32", "100"], "medium": lambda t: ["32768", str(t), "32", "200"]},
                 threads=4, mt=True)
_kernel_workload("canneal", "splash", "PARSEC canneal",
                 "lock-free simulated-annealing placement, cache-aware moves; Banerjee, Parallel Algorithms "
                 "for VLSI CAD (1994); Bienia et al. PACT 2008",
                 {"small": "65,536 elements, 16 x 8,192 moves", "medium": "1,048,576 elements, 24 x 65,536 moves"},
                 {"small": lambda t: ["65536", str(t), "8192", "16"], "medium": lambda t: ["1048576", str(t), "65536", "24"]},
                 threads=4, mt=True)
_kernel_workload("barnes", "splash", "SPLASH-2 BARNES",
                 "Barnes-Hut octree N-body, Barnes & Hut, Nature 1986; Woo et al. ISCA 1995",
                 {"small": "4,096 bodies, 2 steps", "medium": "32,768 bodies, 2 steps"},
                 {"small": lambda t: ["4096", str(t), "2"], "medium": lambda t: ["32768", str(t), "2"]},
                 threads=4, mt=True)
