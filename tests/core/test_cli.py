"""The CLI as a user meets it: every bad input is one line on stderr and exit 2."""

import json
import os

import pytest

from conftest import one_line_error, write

GOOD = 'experiment = "crypto.pad_randomness"\nnbytes = 4096\n'


def test_run_prints_table_and_stores(veil_cli, tmp_path):
    write(tmp_path / "c.toml", GOOD)
    r = veil_cli("run", "c.toml", "seed=3", "--json", "out.json")
    assert r.rc == 0, r.err
    assert "crypto.pad_randomness" in r.out and "chi2_p" in r.out
    rec = json.loads((tmp_path / "out.json").read_text())
    assert rec["config"]["seed"] == 3 and len(rec["config_hash"]) == 16 and rec["veil_version"]
    again = veil_cli("run", "c.toml", "seed=3")
    assert again.rc == 0 and "(cached)" in again.out
    lst = veil_cli("results", "list")
    assert "1 results" in lst.out


def test_missing_file(veil_cli):
    one_line_error(veil_cli("run", "nope.toml"), "nope.toml: no such file")


def test_malformed_toml(veil_cli, tmp_path):
    write(tmp_path / "c.toml", 'experiment = "crypto.pad_randomness"\nnbytes = = 3\n')
    one_line_error(veil_cli("run", "c.toml"), "c.toml: malformed TOML")


def test_unknown_key(veil_cli, tmp_path):
    write(tmp_path / "c.toml", GOOD + "nbyte = 5\n")
    one_line_error(veil_cli("run", "c.toml"), "nbyte: unknown key; allowed:", "nbytes")


def test_wrong_type(veil_cli, tmp_path):
    write(tmp_path / "c.toml", GOOD)
    one_line_error(veil_cli("run", "c.toml", "nbytes=lots"), "nbytes:", "'lots'")


def test_out_of_range(veil_cli, tmp_path):
    write(tmp_path / "c.toml", GOOD)
    one_line_error(veil_cli("run", "c.toml", "nbytes=10"), "nbytes:", "greater than or equal to 1024")


def test_unknown_component(veil_cli, tmp_path):
    write(tmp_path / "c.toml", 'experiment = "crypto.throughput"\nengine = "rot13"\n')
    one_line_error(veil_cli("run", "c.toml"), "engine: unknown crypto.engine 'rot13'; known:", "aes-128-gcm")


def test_unknown_experiment(veil_cli, tmp_path):
    write(tmp_path / "c.toml", 'experiment = "crypto.nothing"\n')
    one_line_error(veil_cli("run", "c.toml"), "unknown experiment 'crypto.nothing'; crypto's experiments:")


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write anywhere; the blocked-folder case covers it")
def test_unwritable_store_permissions(veil_cli, tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir(mode=0o500)
    write(tmp_path / "c.toml", GOOD)
    one_line_error(veil_cli("run", "c.toml", "--store", str(ro / "s.sqlite")), "not writable")


def test_unwritable_store_path(veil_cli, tmp_path):
    write(tmp_path / "blocker", "a file where a folder should be")
    write(tmp_path / "c.toml", GOOD)
    one_line_error(veil_cli("run", "c.toml", "--store", "blocker/s.sqlite"), "results store", "cannot create")


def test_corrupt_store(veil_cli, tmp_path):
    write(tmp_path / "bad.sqlite", "garbage" * 1000)
    write(tmp_path / "c.toml", GOOD)
    one_line_error(veil_cli("run", "c.toml", "--store", "bad.sqlite"), "corrupt")


def test_bad_arguments_are_one_line(veil_cli):
    one_line_error(veil_cli("frobnicate"), "invalid choice")
    one_line_error(veil_cli("reproduce", "nosuchsystem", "--out", "r"), "unknown system 'nosuchsystem'")
    one_line_error(veil_cli("bench", "nosuchsystem"), "no benchmark for 'nosuchsystem'")


def test_version_and_list(veil_cli):
    v = veil_cli("--version")
    assert v.rc == 0 and v.out.startswith("veil ")
    r = veil_cli("list", "crypto")
    assert r.rc == 0
    assert "experiment crypto.throughput" in r.out
    assert "engine (name of a crypto.engine, default 'aes-128-gcm')" in r.out
    assert "size (int, default 262144, >= 16 and <= 67108864): message size in bytes" in r.out
    assert "components crypto.engine:" in r.out and "aes-256-gcm" in r.out
    one_line_error(veil_cli("list", "nosuch"), "unknown system 'nosuch'")


def test_results_export(veil_cli, tmp_path):
    write(tmp_path / "c.toml", GOOD)
    assert veil_cli("run", "c.toml").rc == 0
    r = veil_cli("results", "export", "--format", "parquet", "--out", "r.parquet")
    assert r.rc == 0 and "exported 1 results" in r.out
    one_line_error(veil_cli("results", "export", "--format", "xls"), "expected csv or parquet")


def test_engine_constraint_is_config_error(veil_cli, tmp_path):
    write(tmp_path / "c.toml", 'experiment = "crypto.throughput"\nengine = "xts-aes-128-line"\nsize = 100\n')
    one_line_error(veil_cli("run", "c.toml"), "multiple of 64")
