"""The veiltrace tool on real programs: the cachegrind cross-check, byte-identical traces, the
workload suite's two CI workloads, and bad input through the CLI. Skipped (with the reason)
where Debian's valgrind is not installed (`make trace-deps` installs it as root)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from veil.cli import main
from veil.trace import TraceReader, ensure_trace, get_workload, read_trace, trace_stats
from veil.trace.crosscheck import compare
from veil import _native
from veil.trace.runner import Geometry, cache_dir, run_trace

pytestmark = pytest.mark.skipif(shutil.which("valgrind") is None,
                                reason="valgrind is not installed (apt-get install valgrind; make trace-deps)")


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("traces")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["mcf", "mgrid"])
def test_llc_misses_match_cachegrind(cache, name):
    inv = get_workload(name).prepare("small", None, cache / "inputs" / name)
    c = compare(inv.program, list(inv.args), Geometry(), cache / "inputs" / name)
    assert c["cachegrind"]["ll_misses"] > 100_000
    assert c["ll_miss_error"] < 0.01, c
    assert c["insts_error"] < 0.01, c


@pytest.mark.slow
def test_a_relative_cache_folder_works(tmp_path, monkeypatch):
    # The traced program runs in its input folder: a relative cache path used to name a program
    # that did not exist from there (exit 127 under veiltrace).
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("VEIL_TRACE_CACHE", "rel/traces")
    p = ensure_trace("mcf")
    assert p.is_absolute() and p.parent == tmp_path / "rel" / "traces"
    assert p.stat().st_size > 1000
    wd = cache_dir() / "inputs" / "mgrid"        # as the reproducer's cachegrind check names it
    inv = get_workload("mgrid").prepare("small", None, wd)
    assert compare(inv.program, list(inv.args), Geometry(), wd)["ll_miss_error"] < 0.01


def traced_twice(workload: str, cache: Path) -> Path:
    """Traces `workload` (into the cache), deletes the trace, traces again: the same bytes."""
    first = ensure_trace(workload, cache=cache)
    data = first.read_bytes()
    first.unlink()
    second = ensure_trace(workload, cache=cache)
    assert second == first
    assert second.read_bytes() == data
    return second


@pytest.mark.slow
def test_same_input_gives_the_same_bytes(cache):
    first = traced_twice("mcf", cache)
    assert ensure_trace("mcf", cache=cache) == first       # cached: no third run


@pytest.mark.slow
def test_a_suite_trace_does_not_depend_on_the_cache_path(cache, tmp_path):
    # Two users' caches (or a clone's, or CI's) sit at different paths: before, the paths reached the
    # program's stack and memory (PWD, VALGRIND_LIB, LD_PRELOAD, argv[0], the loader's origin of a
    # preload) and shifted its addresses; mcf's fills, instructions and values differed.
    first = ensure_trace("mcf", cache=cache)
    other = ensure_trace("mcf", cache=tmp_path / ("a-much-longer-folder-name" * 3) / "traces")
    assert other.name == first.name and other.read_bytes() == first.read_bytes()


@pytest.mark.slow
def test_multithreaded_trace_is_byte_identical(cache):
    # ocean: 4 threads at its smallest input, false sharing at the band edges and a barrier
    # twice per sweep: before the offline LLC replay, LLC fills per thread varied by ~1% and the
    # bytes of lines written by two threads with the host's thread order.
    second = traced_twice("ocean", cache)
    h, recs = read_trace(second)
    assert h["extra"]["stream"] == "llc"
    assert h["extra"]["replay"]["quantum"] == _native.trace.REPLAY_QUANTUM
    assert "llc-replay" in h["tool_version"]
    tool = trace_stats(second)["summary"]["stats"]["threads"]
    assert len(tool) == 4 and sorted(np.unique(recs["thread"])) == [0, 1, 2, 3]
    for t in range(4):
        mine = recs[recs["thread"] == t]
        assert np.count_nonzero(mine["kind"] != 2) == tool[t]["load_fills"] + tool[t]["store_fills"]
        assert np.count_nonzero(mine["kind"] == 2) == tool[t]["writebacks"]
        assert int(mine["insts"].sum()) <= tool[t]["insts"]
    # Threads 1 and 3 relax the same number of rows: the same instructions, exactly.
    assert tool[1]["insts"] == tool[3]["insts"]
    assert tool[1]["start"] < tool[2]["start"] < tool[3]["start"]
    # Another quantum is another trace (and another cache entry).
    other = ensure_trace("ocean", cache=cache, quantum=50)
    assert other != second
    assert read_trace(other)[0]["extra"]["replay"]["quantum"] == 50


@pytest.mark.slow
def test_replay_of_one_thread_is_the_tools_llc(cache, tmp_path):
    # One thread: the offline replay must make exactly the tool's own LLC decisions.
    wd = cache / "inputs" / "mgrid"
    inv = get_workload("mgrid").prepare("small", None, wd)
    direct, replayed = tmp_path / "direct.vtrace", tmp_path / "replayed.vtrace"
    run_trace(inv.program, list(inv.args), direct, Geometry(), cwd=wd)
    run_trace(inv.program, list(inv.args), replayed, Geometry(), cwd=wd, quantum=1000)
    (_, a), (hb, b) = read_trace(direct), read_trace(replayed)
    assert hb["extra"]["stream"] == "llc" and len(a) > 100_000
    # The replay mode leaves synchronisation calls out: mgrid makes one, in the dynamic linker's
    # exit path (a recursive pthread_mutex_lock), so the streams part within its last records.
    n = min(len(a), len(b))
    meta = [a[c][:n] != b[c][:n] for c in ("thread", "kind", "addr", "insts", "llc_hits")]
    differ = np.nonzero(np.logical_or.reduce(meta))[0]
    first = int(differ[0]) if len(differ) else n
    assert first > 0.999 * len(a), (first, len(a))
    a, b = a[:first], b[:first]
    fills = a["kind"] != 2
    same = np.all(a["data"] == b["data"], axis=1)
    # Fill bytes: the replay's memory is the program's (mgrid generates its input; no file reads).
    assert np.mean(same[fills]) > 0.9999
    # Writebacks: the tool reads memory at eviction, the replay writes what the LLC held.
    assert np.mean(same[~fills]) > 0.99


@pytest.mark.slow
def test_gzip_trace(cache):
    p = ensure_trace("gzip", cache=cache)
    with TraceReader(p) as r:
        h = r.header
    assert h["workload"] == "gzip" and h["args"][-1] == "input-1048576.dat" and len(h["input_hash"]) == 64
    assert h["llc"] == {"size": 262144, "assoc": 4} and h["line_size"] == 64
    s = trace_stats(p)
    tool = s["summary"]["stats"]["threads"][0]
    assert s["fills"] == tool["load_fills"] + tool["store_fills"] > 1000
    assert s["writebacks"] == tool["writebacks"]
    assert s["insts"] == tool["insts"] > 10**8
    assert s["top_values"][0][0] == 0                   # zero is the most frequent fetched word
    assert 0 < s["coverage"][8] <= s["coverage"][16] <= s["coverage"][32] < 1
    # A compressed trace of 1 MiB of input: the fills carry the input's bytes.
    _, recs = read_trace(p)
    text = recs["data"][recs["kind"] != 2].tobytes()
    assert b"tion" in text


@pytest.mark.slow
def test_radix_four_threads(cache):
    p = ensure_trace("radix", cache=cache)
    _, recs = read_trace(p)
    s = trace_stats(p)
    tool = s["summary"]["stats"]["threads"]
    assert len(tool) == 4 and sorted(np.unique(recs["thread"])) == [0, 1, 2, 3]
    for t in range(4):
        mine = recs[recs["thread"] == t]
        assert np.count_nonzero(mine["kind"] != 2) == tool[t]["load_fills"] + tool[t]["store_fills"]
        assert int(mine["insts"].sum()) <= tool[t]["insts"]
        assert int(mine["llc_hits"].sum()) <= tool[t]["llc_hits"]
    # The three workers sort equal slices: the same instructions, to within the pthread calls.
    w = [tool[t]["insts"] for t in (1, 2, 3)]
    assert max(w) - min(w) < 0.001 * max(w)
    assert np.all(recs["addr"] % 64 == 0)


def run_cli(capsys, *argv):
    rc = main(["trace", *argv])
    out = capsys.readouterr()
    return rc, out.out + out.err


def test_bad_input_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("VEIL_TRACE_CACHE", str(tmp_path / "cache"))
    rc, text = run_cli(capsys, "run", "nope")
    assert rc == 2 and "unknown workload 'nope'" in text and "Traceback" not in text
    bad = tmp_path / "bad.vtrace"
    bad.write_bytes(b"VEILTRC\0" + b"\x01\0\0\0" + b"\x05\0\0\0{}")
    rc, text = run_cli(capsys, "stats", str(bad))
    assert rc == 2 and "truncated at byte" in text and len(text.strip().splitlines()) == 1
    rc, text = run_cli(capsys, "run", "--cmd", "--out", str(tmp_path / "no" / "x.vtrace"), "--", "true")
    assert rc == 2 and "does not exist" in text
    rc, text = run_cli(capsys, "run", "--cmd", "--out", str(tmp_path / "f.vtrace"), "--", "false")
    # One line: progress lines (a slow machine prints them for `false` too) end in a carriage return.
    assert rc == 1 and "exited with status 1" in text and len(text.strip().split("\n")) == 1
    assert text.rstrip("\n").rsplit("\r", 1)[-1].startswith("veil: error: false exited with status 1")
    assert not (tmp_path / "f.vtrace").exists()
    rc, text = run_cli(capsys, "run", "gzip", "--llc", "300KB")
    assert rc == 2 and "not a power of two" in text
    rc, text = run_cli(capsys, "run", "--cmd", "--quantum", "0", "--out", str(tmp_path / "q.vtrace"), "--", "true")
    assert rc == 2 and "quantum: 0 is not a positive number" in text
    rc, text = run_cli(capsys, "run", "gzip", "--quantum", "5")
    assert rc == 2 and "single-threaded" in text


def test_missing_valgrind_is_one_line(tmp_path):
    env = dict(os.environ, PATH=str(tmp_path))
    r = subprocess.run([sys.executable, "-m", "veil.cli", "trace", "run", "--cmd", "--out", str(tmp_path / "x"),
                        "--", "/bin/true"], env=env, capture_output=True, text=True)
    assert r.returncode == 1 and "valgrind is not installed" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_cmd_trace(tmp_path, capsys):
    out = tmp_path / "ls.vtrace"
    rc, text = run_cli(capsys, "run", "--cmd", "--out", str(out), "--", "/bin/ls", "-l", "/")
    assert rc == 0 and "records" in text
    h, recs = read_trace(out)
    assert h["program"] == "ls" and h["args"] == ["-l", "/"] and len(recs) > 100
    rc, text = run_cli(capsys, "stats", str(out), "--json")
    assert json.loads(text)["records"] == len(recs)


CLOCKS = r"""
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
int main(void) {
    struct timespec m, r, c; struct timeval tv;
    long *keep = malloc(4 * sizeof *keep);   /* the clocks reach memory: the trace's values */
    clock_gettime(CLOCK_MONOTONIC, &m); clock_gettime(CLOCK_REALTIME, &r);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c); gettimeofday(&tv, NULL);
    keep[0] = m.tv_nsec; keep[1] = r.tv_sec; keep[2] = c.tv_nsec; keep[3] = tv.tv_usec;
    printf("%ld %ld %ld %ld\n", keep[0], keep[1], keep[2], keep[3]);
    return 0;
}
"""


def _compile(tmp_path: Path, name: str, source: str) -> Path:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    (tmp_path / f"{name}.c").write_text(source)
    exe = tmp_path / name
    subprocess.run([cc, "-O1", "-o", str(exe), str(tmp_path / f"{name}.c")], check=True)
    return exe


def test_a_program_reading_the_clocks_traces_byte_identically(tmp_path, capsys):
    """Outside the suite: clock_gettime (monotonic, realtime, CPU time) and gettimeofday read the
    thread's instruction clock under the tool, so two runs give the same bytes."""
    exe = _compile(tmp_path, "clocks", CLOCKS)
    outs = [tmp_path / "a.vtrace", tmp_path / "b.vtrace"]
    for out in outs:
        rc, text = run_cli(capsys, "run", "--cmd", "--out", str(out), "--", str(exe))
        assert rc == 0, text
    assert outs[0].read_bytes() == outs[1].read_bytes()
    host = subprocess.run([str(exe)], capture_output=True, text=True).stdout.split()
    assert int(host[1]) > 1_600_000_000  # the host's realtime clock is not the tool's 10^9 s epoch


def test_a_program_killed_by_a_signal_is_one_line_not_a_valgrind_panic(tmp_path, capsys):
    exe = _compile(tmp_path, "selfkill", "#include <signal.h>\nint main(void) { raise(SIGTERM); return 0; }\n")
    rc, text = run_cli(capsys, "run", "--cmd", "--out", str(tmp_path / "k.vtrace"), "--", str(exe))
    assert rc == 1 and "impossible" not in text and "supposed to be fatal" not in text
    assert text.rstrip("\n").rsplit("\r", 1)[-1].startswith("veil: error: selfkill exited with status 143")
    rc, text = run_cli(capsys, "run", "--cmd", "--out", str(tmp_path / "d.vtrace"), "--", str(tmp_path))
    assert rc == 2 and "is a directory, not an executable" in text


STRADDLE = r"""
#include <stdlib.h>
#include <string.h>
int main(void) {
    char *p = aligned_alloc(64, 1 << 20);
    memset(p, 1, 1 << 20);
    volatile long s = 0;
    for (int i = 0; i < 1000; i++) { long v; memcpy(&v, p + 64 * i + OFFSET, 8); s += v; }
    return (int)(s & 1);
}
"""


def test_stats_count_the_accesses_that_straddle_two_lines(tmp_path, capsys):
    counts = {}
    for offset in (60, 56):  # 8 bytes at 60 span two 64-byte lines; at 56 they fit in one
        exe = _compile(tmp_path, f"s{offset}", STRADDLE.replace("OFFSET", str(offset)))
        out = tmp_path / f"s{offset}.vtrace"
        rc, text = run_cli(capsys, "run", "--cmd", "--out", str(out), "--", str(exe))
        assert rc == 0, text
        rc, text = run_cli(capsys, "stats", str(out))
        assert rc == 0
        counts[offset] = int(text.split("straddling accesses: ")[1].split()[0])
    assert counts[60] - counts[56] == 1000, counts  # exactly the loop's loads


@pytest.mark.parametrize("replay", [False, True])
def test_cmd_trace_header_names_the_threads_that_ran(tmp_path, capsys, replay):
    """A command's worker count is not known before it runs: the header gets the threads that
    left records (it used to say 0, and memnet then replayed nothing), and memnet refuses a
    trace whose threads do not match its CPUs in one line."""
    from veil.trace.workloads import build_kernel

    exe = build_kernel("fft", tmp_path / "bin")
    out = tmp_path / "fft.vtrace"
    rc, _ = run_cli(capsys, "run", "--cmd", *(["--replay"] if replay else []), "--out", str(out), "--",
                    str(exe), "10", "3")
    assert rc == 0
    h, recs = read_trace(out)
    summary = json.loads(_native.trace.summary(str(out)))
    assert h["threads"] == summary["threads"] == 3 and len(recs) > 0
    from conftest import one_line_error, write

    write(tmp_path / "m.toml", f'experiment = "memnet.memsys"\nworkload = "trace"\ntrace = "{out}"\ncpus = 16\n')
    r = subprocess.run([sys.executable, "-m", "veil.cli", "run", str(tmp_path / "m.toml")], capture_output=True,
                       text=True, cwd=tmp_path)
    from conftest import CliResult

    one_line_error(CliResult(r.returncode, r.stdout, r.stderr), "3 threads but cpu.count is 16")


@pytest.mark.slow
def test_traced_in_parallel_gives_the_serial_bytes(tmp_path):
    # `veil reproduce trace` traces on two valgrind processes at once: the same files as one at a
    # time, for a single-threaded workload at two cache sizes (its input folder locked between
    # them) and a 4-thread one replayed offline, whatever runs beside it. Same cache folder both
    # times: the input folder's path is part of the traced program's environment (its addresses).
    from veil.trace import ensure_traces

    reqs = [{"workload": "mcf", "llc_bytes": 256 * 1024, "cache": tmp_path}, {"workload": "ocean", "cache": tmp_path},
            {"workload": "mcf", "llc_bytes": 1024 * 1024, "cache": tmp_path}]
    two = ensure_traces(reqs, jobs=2)
    assert len(set(two)) == 3
    data = [p.read_bytes() for p in two]
    for p in two:
        p.unlink()
    one = ensure_traces(reqs, jobs=1)
    assert one == two
    for p, d in zip(one, data):
        assert p.read_bytes() == d, p.name
