"""Output paths checked before any work starts: a run must not spend an hour and then fail to
write its result (exit 2, one line naming the flag and the path)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from veil.core.errors import ConfigError

FIGURE_FORMATS = (".png", ".svg", ".pdf")


def _existing_ancestor(path: Path) -> Path:
    p = path
    while not p.exists():
        if p.parent == p:
            break
        p = p.parent
    return p


def _writable_folder(folder: Path, flag: str, p: Path) -> None:
    """`folder` (the nearest existing one on the way to `p`) must take new files. A scratch file
    is created and removed: permission bits do not tell root about read-only mounts."""
    if not folder.is_dir():
        raise ConfigError(f"{flag} {p}: {folder} is not a directory")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ConfigError(f"{flag} {p}: folder {folder} is not writable")
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as e:
        raise ConfigError(f"{flag} {p}: folder {folder} is not writable ({e.strerror})") from None


def _same(a: Path, b: str | Path) -> bool:
    try:
        return a.resolve() == Path(b).resolve()
    except OSError:
        return False


def _precious_kind(p: Path) -> str | None:
    """What an existing file is, when it is something a command must never overwrite: a results
    store, a Veil trace or a config (data lost without a word, otherwise)."""
    if p.suffix.lower() == ".toml":
        return "a config file"
    try:
        with open(p, "rb") as f:
            head = f.read(16)
    except OSError:
        return None
    if head == b"SQLite format 3\0":
        return "a results store (SQLite)"
    if head[:8] == b"VEILTRC\0":
        return "a Veil trace"
    return None


def check_output_file(path: str | Path, flag: str, inputs: tuple = ()) -> Path:
    """A file we will write (creating its folders): refused if it cannot be, or if it is one of
    the command's `inputs` (its config, its store) or an existing store, trace or config."""
    p = Path(path)
    for src in inputs:
        if src is not None and _same(p, src):
            raise ConfigError(f"{flag} {p}: is this command's own input ({src}); refusing to overwrite it, "
                              f"choose another path")
    if p.exists():
        if p.is_dir():
            raise ConfigError(f"{flag} {p}: is a directory, expected a file path")
        kind = _precious_kind(p) if p.is_file() else None
        if kind:
            raise ConfigError(f"{flag} {p}: is {kind}; refusing to overwrite it, choose another path")
        if not os.access(p, os.W_OK):
            raise ConfigError(f"{flag} {p}: not writable")
        return p
    _writable_folder(_existing_ancestor(p.parent), flag, p)
    return p


def check_output_dir(path: str | Path, flag: str) -> Path:
    """A folder we will write into (creating it): refused if it cannot be."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise ConfigError(f"{flag} {p}: exists and is not a directory")
    _writable_folder(_existing_ancestor(p), flag, p)
    return p


def check_figure_file(path: str | Path, flag: str = "--out", inputs: tuple = ()) -> Path:
    """A figure file: a known extension (PNG, SVG, PDF) and a writable place."""
    p = Path(path)
    if p.suffix.lower() not in FIGURE_FORMATS:
        raise ConfigError(f"{flag} {p}: unknown figure format '{p.suffix or '(none)'}'; "
                          f"use one of {', '.join(FIGURE_FORMATS)}")
    return check_output_file(p, flag, inputs)
