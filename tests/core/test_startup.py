"""Start-up: a command imports only the system it runs (the registry loads systems on demand)."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("scipy", "matplotlib", "pandas", "dask", "distributed", "sklearn", "seal")
PROBE = """
import json, sys
from veil.cli import main
rc = main(sys.argv[1:])
print(json.dumps({"rc": rc, "modules": sorted(sys.modules)}), file=sys.stderr)
"""


def _modules(args: list[str]) -> tuple[int, list[str]]:
    out = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, check=False)
    last = json.loads(out.stderr.strip().splitlines()[-1])
    return last["rc"], last["modules"]


def _systems(mods: list[str]) -> set[str]:
    return {m.split(".")[1] for m in mods if m.startswith("veil.") and m.split(".")[1] not in ("core", "cli", "_native")}


def test_version_imports_no_system_and_no_heavy_library():
    out = subprocess.run([sys.executable, "-c", "import sys, json\nfrom veil.cli import main\n"
                          "try:\n    main(['--version'])\nexcept SystemExit:\n    pass\n"
                          "print(json.dumps(sorted(sys.modules)), file=sys.stderr)"],
                         capture_output=True, text=True, check=True)
    mods = json.loads(out.stderr.strip().splitlines()[-1])
    assert out.stdout.startswith("veil ")
    assert _systems(mods) == set()
    assert not [m for m in mods if m.split(".")[0] in HEAVY + ("numpy",)]


def test_tiny_run_imports_only_its_system(tmp_path):
    rc, mods = _modules(["run", "memnet.latency_load", "mode=fixed", "warmup_cycles=10", "measure_cycles=100", "k=2",
                         "--store", str(tmp_path / "r.sqlite"), "--no-progress"])
    assert rc == 0
    assert _systems(mods) == {"memnet"}
    assert not [m for m in mods if m.split(".")[0] in HEAVY]
    assert "veil.memnet.reproduce" not in mods and "veil.core.report" not in mods
    # Measured: 251 modules with the lazy registry (numpy not among them: memnet's adversary, which
    # needs it, is a declared experiment); 995 when every system, reproducer and scipy.stats load
    # first (490 of them scipy).
    assert "numpy" not in mods
    assert len(mods) < 350, len(mods)


def test_system_command_loads_that_system_only():
    out = subprocess.run([sys.executable, "-c", "import sys, json\nfrom veil.cli import build_parser\n"
                          "build_parser(['trace', '--help'])\n"
                          "print(json.dumps(sorted(sys.modules)))"], capture_output=True, text=True, check=True)
    assert _systems(json.loads(out.stdout)) == {"trace"}


def test_declared_experiment_loads_its_module_when_asked_for():
    out = subprocess.run([sys.executable, "-c", "import sys, json\nfrom veil.core.registry import REGISTRY\n"
                          "REGISTRY.experiment('memnet.leak')\nprint(json.dumps(sorted(sys.modules)))"],
                         capture_output=True, text=True, check=True)
    mods = json.loads(out.stdout)
    assert "veil.memnet.leak" in mods and "scipy" not in mods


def test_unknown_experiment_still_lists_every_known_system_or_experiment():
    """Every system is loaded for the message: an unknown system lists them all (a short line,
    issue 41), a known system's prefix lists that system's experiments."""
    import pytest

    from veil.core import ConfigError
    from veil.core.registry import REGISTRY

    with pytest.raises(ConfigError) as e:
        REGISTRY.experiment("nosuch.thing")
    assert all(s in str(e.value) for s in ("crypto", "enclave", "he", "memcrypt", "memnet", "oram"))
    assert len(str(e.value)) < 250
    with pytest.raises(ConfigError) as e:
        REGISTRY.experiment("oram.nosuch")
    assert "oram.access" in str(e.value) and "memnet" not in str(e.value)
