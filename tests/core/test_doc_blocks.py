"""Issue 41: the documented code runs as written, as a newcomer would run it: every ```python block
of README.md, docs/first-hour.md and docs/python.md saved as a script and run in a fresh
interpreter, in page order, on a scratch store; first-hour's ```sh `veil` lines and its sweep file
between them, as the page has them."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = ["README.md", "docs/first-hour.md", "docs/python.md"]


def blocks(page: str) -> list[tuple[str, str]]:
    """(language, text) of every fenced block of `page`, in order."""
    return re.findall(r"^```(\w*)\n(.*?)^```", (ROOT / page).read_text(), re.S | re.M)


def _env(store: Path) -> dict[str, str]:
    return {**os.environ, "VEIL_STORE": str(store), "VEIL_PROGRESS": "0"}


def _script(path: Path, code: str, cwd: Path, store: Path) -> subprocess.CompletedProcess:
    path.write_text(code)
    return subprocess.run([sys.executable, str(path)], cwd=cwd, env=_env(store), capture_output=True,
                          text=True, timeout=600)


def test_every_documented_page_has_the_blocks_this_test_runs():
    langs = {page: [lang for lang, _ in blocks(page)] for page in PAGES}
    assert all("python" in v for v in langs.values()), langs
    assert "sh" in langs["docs/first-hour.md"] and "toml" in langs["docs/first-hour.md"]


@pytest.mark.slow
def test_every_python_block_runs_as_a_script_in_page_order(tmp_path):
    """First-hour's sh blocks run their `veil` lines (installation lines, `git clone` and `make`,
    are what the test suite itself stands on; `veil reproduce` is the long one, run by
    test_first_hour.py); a toml block that names its file (`# first_sweep.toml`) is written."""
    store = tmp_path / "store" / "results.sqlite"
    (tmp_path / "configs").symlink_to(ROOT / "configs")
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    n = 0
    for page in PAGES:
        for i, (lang, text) in enumerate(blocks(page)):
            where = f"{page} block {i} ({lang})"
            if lang == "python":
                n += 1
                p = _script(tmp_path / f"block{n}.py", text, tmp_path, store)
                assert p.returncode == 0 and "Traceback" not in p.stderr, (where, p.stderr[-3000:])
            elif lang == "toml" and text.startswith("# ") and text.split("\n")[0].endswith(".toml"):
                (tmp_path / text.split("\n")[0][2:].strip()).write_text(text)
            elif lang == "sh" and page == "docs/first-hour.md":
                for line in text.splitlines():
                    cmd = line.split(" #")[0].strip()
                    if not cmd.startswith("veil ") or cmd.startswith("veil reproduce"):
                        continue
                    p = subprocess.run([sys.executable, "-m", "veil.cli", *cmd.split()[1:]], cwd=tmp_path,
                                       env=_env(store), capture_output=True, text=True, timeout=600)
                    assert p.returncode == 0, (where, cmd, p.stderr[-2000:])
    assert n == 3


UNGUARDED = """
import pathlib, veil
# A side effect at top level: a worker that re-ran this script would repeat it.
with open("ran.txt", "a") as f:
    f.write("x")
recs = veil.sweep({"experiment": "crypto.pad_randomness", "base": {"nbytes": 4096},
                   "grid": {"seed": [1, 2, 3]}}, jobs=2)
print(len(recs), "records")
"""


def test_a_sweep_with_jobs_runs_from_a_script_without_a_main_guard(tmp_path):
    p = _script(tmp_path / "plain.py", UNGUARDED, tmp_path, tmp_path / "s.sqlite")
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.strip() == "3 records"
    assert (tmp_path / "ran.txt").read_text() == "x"  # the script body ran once, not once per worker


OWN_EXPERIMENT = """
import veil
from veil.core import ExperimentConfig, register_experiment


class C(ExperimentConfig):
    x: int = 1


@register_experiment("mine.double", C, results={"y": ("", "twice x")})
def double(cfg):
    return {"y": 2 * cfg.x}


SPEC = {"experiment": "mine.double", "grid": {"x": [1, 2, 3]}}
"""


def test_a_script_that_registers_its_experiment_needs_the_guard_and_says_so(tmp_path):
    """Such a script's workers must re-run it (the experiment lives there): unguarded, the sweep
    is refused before any point in one line naming the guard; guarded, it runs."""
    p = _script(tmp_path / "own.py", OWN_EXPERIMENT + "veil.sweep(SPEC, jobs=2, store=False)\n", tmp_path,
                tmp_path / "s.sqlite")
    assert p.returncode == 1 and "if __name__ == \"__main__\":" in p.stderr.strip().splitlines()[-1], p.stderr
    assert "BrokenProcessPool" not in p.stderr
    p = _script(tmp_path / "own.py", OWN_EXPERIMENT + "if __name__ == '__main__':\n"
                "    print([r.result['y'] for r in veil.sweep(SPEC, jobs=2, store=False)])\n", tmp_path,
                tmp_path / "s.sqlite")
    assert p.returncode == 0 and p.stdout.strip() == "[2, 4, 6]", p.stderr[-2000:]
