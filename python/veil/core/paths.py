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


def check_output_file(path: str | Path, flag: str) -> Path:
    """A file we will write (creating its folders): refused if it cannot be."""
    p = Path(path)
    if p.exists():
        if p.is_dir():
            raise ConfigError(f"{flag} {p}: is a directory, expected a file path")
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


def check_figure_file(path: str | Path, flag: str = "--out") -> Path:
    """A figure file: a known extension (PNG, SVG, PDF) and a writable place."""
    p = Path(path)
    if p.suffix.lower() not in FIGURE_FORMATS:
        raise ConfigError(f"{flag} {p}: unknown figure format '{p.suffix or '(none)'}'; "
                          f"use one of {', '.join(FIGURE_FORMATS)}")
    return check_output_file(p, flag)
