"""`veil trace run --cmd` of a multi-threaded program without --replay says on stderr what that
means for the adversary (its tracings differ; one a side is refused by `veil memnet leak`)."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(shutil.which("valgrind") is None or shutil.which("cc") is None,
                                reason="valgrind and a C compiler are needed")

PROG = r"""
#include <pthread.h>
#include <stdlib.h>
static double *a;
static void *work(void *p) { double s = 0; long k = (long)p; for (int i = 0; i < 100000; i++) s += a[(i * 7 + k) % 100000]; return (void *)(long)s; }
int main(void) {
  a = calloc(100000, sizeof(double));
  pthread_t t[2];
  for (long i = 0; i < 2; i++) pthread_create(&t[i], 0, work, (void *)i);
  for (int i = 0; i < 2; i++) pthread_join(t[i], 0);
  return 0;
}
"""


def trace_cmd(tmp_path, *extra):
    out = tmp_path / f"t{len(extra)}.vtrace"
    return subprocess.run([sys.executable, "-m", "veil.cli", "trace", "run", "--cmd", *extra, "--out", str(out), "--",
                           str(tmp_path / "prog")], capture_output=True, text=True, timeout=300, cwd=tmp_path)


@pytest.mark.slow
def test_a_multithreaded_tracing_without_replay_says_what_it_means_for_the_adversary(tmp_path):
    (tmp_path / "prog.c").write_text(PROG)
    subprocess.run(["cc", "-O1", "-pthread", "-o", str(tmp_path / "prog"), str(tmp_path / "prog.c")], check=True)
    r = trace_cmd(tmp_path)
    assert r.returncode == 0, r.stderr
    notes = [line for line in r.stderr.splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and "3 threads traced without --replay" in notes[0] and "memnet leak" in notes[0], r.stderr
    r = trace_cmd(tmp_path, "--replay")
    assert r.returncode == 0, r.stderr
    assert "note:" not in r.stderr
