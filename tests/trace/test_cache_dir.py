"""Where traces are cached: one folder per user, shared by every clone, unless the environment says."""

from __future__ import annotations

from pathlib import Path

from veil.trace.runner import cache_dir


def test_the_environment_names_the_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("VEIL_TRACE_CACHE", str(tmp_path / "t"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "t"


def test_without_it_the_users_cache_folder_is_shared_by_clones(monkeypatch, tmp_path):
    monkeypatch.delenv("VEIL_TRACE_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    a, b = tmp_path / "clone-a", tmp_path / "clone-b"
    a.mkdir()
    b.mkdir()
    monkeypatch.chdir(a)
    first = cache_dir()
    monkeypatch.chdir(b)
    assert cache_dir() == first == tmp_path / "xdg" / "veil" / "traces"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == Path(tmp_path / "home" / ".cache" / "veil" / "traces")
