"""InputFile: config-relative paths, content-keyed config hashes."""

from __future__ import annotations

import os

import pytest
from pydantic import Field

from conftest import one_line_error, write
from veil.core import ConfigError, ExperimentConfig, InputFile
from veil.core.config import config_hash, load_config, validate
from veil.core.registry import register_experiment
from veil.core.sweep import load_spec


class Nested(ExperimentConfig):
    trace: InputFile = Field("", description="a nested input")


class FileDemoConfig(ExperimentConfig):
    data: InputFile = Field(..., description="an input file")
    extra: list[InputFile] = Field([], description="more input files")
    inner: Nested = Nested()


@register_experiment("testfile.size", FileDemoConfig, doc="bytes in its input files")
def size(cfg: FileDemoConfig) -> dict:
    return {"bytes": sum(os.path.getsize(p) for p in [cfg.data, *cfg.extra])}


def test_relative_paths_resolve_against_the_config_folder(tmp_path, monkeypatch):
    write(tmp_path / "cfgs" / "in.txt", "abc")
    write(tmp_path / "cfgs" / "sub" / "t.txt", "t")
    cfg_file = write(tmp_path / "cfgs" / "c.toml",
                     'experiment = "testfile.size"\ndata = "in.txt"\nextra = ["in.txt"]\n[inner]\ntrace = "sub/t.txt"\n')
    monkeypatch.chdir(tmp_path / "cfgs" / "sub")  # anywhere but the config's folder
    _, cfg = load_config(cfg_file)
    assert cfg.data == str(tmp_path / "cfgs" / "in.txt")
    assert cfg.extra == [str(tmp_path / "cfgs" / "in.txt")]
    assert cfg.inner.trace == str(tmp_path / "cfgs" / "sub" / "t.txt")


def test_command_line_paths_resolve_against_the_working_directory(tmp_path, monkeypatch):
    write(tmp_path / "cfgs" / "in.txt", "abc")
    write(tmp_path / "other.txt", "xyz")
    cfg_file = write(tmp_path / "cfgs" / "c.toml", 'experiment = "testfile.size"\ndata = "in.txt"\n')
    monkeypatch.chdir(tmp_path)
    _, cfg = load_config(cfg_file, ["data=other.txt"])
    assert cfg.data == str(tmp_path / "other.txt")


def test_sweep_paths_resolve_against_the_sweep_folder(tmp_path, monkeypatch):
    write(tmp_path / "s" / "a.txt", "a")
    write(tmp_path / "s" / "b.txt", "bb")
    sweep = write(tmp_path / "s" / "sweep.toml",
                  'experiment = "testfile.size"\n[base]\ndata = "a.txt"\n[grid]\nextra = [["a.txt"], ["b.txt"]]\n')
    monkeypatch.chdir(tmp_path)
    spec = load_spec(sweep)
    assert [c.extra for c in spec.configs] == [[str(tmp_path / "s" / "a.txt")], [str(tmp_path / "s" / "b.txt")]]


def test_hash_follows_content_not_path(tmp_path):
    a = write(tmp_path / "a.txt", "same")
    b = write(tmp_path / "elsewhere" / "b.txt", "same")
    ha = config_hash("testfile.size", validate("testfile.size", {"data": str(a)}))
    hb = config_hash("testfile.size", validate("testfile.size", {"data": str(b)}))
    assert ha == hb  # moving a file keeps its cached results
    st = a.stat()
    a.write_text("diff")  # same size, and the same timestamp as an edit within one clock tick
    os.utime(a, ns=(st.st_atime_ns, st.st_mtime_ns))
    hc = config_hash("testfile.size", validate("testfile.size", {"data": str(a)}))
    assert hc != ha
    c = write(tmp_path / "c.txt", "nested")
    nested = validate("testfile.size", {"data": str(b), "inner": {"trace": str(c)}, "extra": [str(c)]})
    before = config_hash("testfile.size", nested)
    c.write_text("NESTED")  # nested fields and lists count too
    assert config_hash("testfile.size", nested) != before


def test_missing_file_is_a_config_error_naming_the_field(tmp_path):
    with pytest.raises(ConfigError, match=r"data: no such file: .*nope\.txt"):
        validate("testfile.size", {"data": str(tmp_path / "nope.txt")})
    with pytest.raises(ConfigError, match="data: not a regular file"):
        validate("testfile.size", {"data": str(tmp_path)})


def test_cli_edit_of_a_memnet_topology_file_gives_a_new_result(veil_cli, tmp_path):
    write(tmp_path / "topo" / "ring.adj", "terminals 2\n0: 1 2\n1: 2 0\n2: 0 1\n")
    write(tmp_path / "topo" / "ring.toml",
          'experiment = "memnet.latency_load"\ntopology = "file"\nrouting = "min"\ntopology_file = "ring.adj"\n'
          'rate = 0.1\nmode = "fixed"\nwarmup_cycles = 200\nmeasure_cycles = 2000\n')
    first = veil_cli("run", "topo/ring.toml")
    assert first.rc == 0, first.err
    again = veil_cli("run", "topo/ring.toml")
    assert "(cached)" in again.out.splitlines()[0]
    write(tmp_path / "topo" / "ring.adj", "terminals 2\n0: 1@9 2@9\n1: 2@9 0@9\n2: 0@9 1@9\n")  # 9-cycle links
    edited = veil_cli("run", "topo/ring.toml")
    assert edited.rc == 0, edited.err
    assert "(cached)" not in edited.out.splitlines()[0]
    assert edited.out.splitlines()[0].split()[2] != first.out.splitlines()[0].split()[2]  # config hash

    def latency(out: str) -> float:
        return next(float(line.split()[1]) for line in out.splitlines() if line.split()[:1] == ["avg_packet_latency"])

    assert latency(edited.out) > latency(first.out) + 5


def test_cli_shipped_file_config_runs_outside_the_repo_root(veil_cli):
    from pathlib import Path

    import veil

    shipped = Path(veil.__file__).resolve().parents[2] / "configs" / "memnet" / "ring_file.toml"
    r = veil_cli("run", str(shipped), "mode=fixed", "warmup_cycles=100", "measure_cycles=1000")
    assert r.rc == 0, r.err


def test_cli_missing_input_file_is_one_line(veil_cli, tmp_path):
    write(tmp_path / "c.toml", 'experiment = "memnet.latency_load"\ntopology = "file"\ntopology_file = "gone.adj"\n')
    one_line_error(veil_cli("run", "c.toml"), "topology_file: no such file", "gone.adj")
