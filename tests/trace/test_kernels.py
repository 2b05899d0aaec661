"""The in-repo kernels run natively (no valgrind): mcf's network simplex reaches the optimum that
successive shortest paths finds on the same network, and canneal anneals (its routing cost falls)
deterministically on one thread. Each kernel also checks itself (feasibility, optimality by
reduced costs, the placement a permutation) and exits non-zero when a check fails."""

import re
import shutil
import subprocess

import pytest

from veil.trace.workloads import build_kernel, get_workload

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")


@pytest.fixture(scope="module")
def bin_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("kernels") / "bin"   # where prepare() builds them too


def run(exe, *args):
    r = subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


def cost(text):
    return int(re.search(r"cost (\d+)$", text.strip()).group(1))


@pytest.mark.parametrize("args", [(300, 4, 30), (1500, 3, 40), "small"])
def test_network_simplex_matches_successive_shortest_paths(bin_dir, args):
    exe = build_kernel("mcf", bin_dir)
    if args == "small":                    # the registered input that memcrypt traces
        args = get_workload("mcf").prepare("small", None, bin_dir.parent / "mcf-small").args
    simplex, ssp = run(exe, *args), run(exe, *args, "ssp")
    assert "network simplex" in simplex and "successive shortest paths" in ssp
    assert int(re.search(r"(\d+) pivots", simplex).group(1)) > int(args[0])
    assert cost(simplex) == cost(ssp) > 0


def test_mcf_refuses_an_unknown_mode(bin_dir):
    r = subprocess.run([str(build_kernel("mcf", bin_dir)), "300", "4", "30", "dijkstra"], capture_output=True, text=True)
    assert r.returncode == 2 and "can only be 'ssp'" in r.stderr


def canneal_costs(text):
    m = re.search(r"routing cost (\d+) -> (\d+)$", text.strip())
    return int(m.group(1)), int(m.group(2))


def test_canneal_anneals_deterministically_on_one_thread(bin_dir):
    exe = build_kernel("canneal", bin_dir)
    first, second = run(exe, 4096, 1, 4096, 12), run(exe, 4096, 1, 4096, 12)
    assert first == second
    before, after = canneal_costs(first)
    assert after < 0.8 * before
    # More threads: the same netlist and start, a different but still falling cost (the
    # moves race; the kernel checks that the placement stays a permutation).
    before4, after4 = canneal_costs(run(exe, 4096, 4, 4096, 12))
    assert before4 == before and after4 < 0.8 * before
