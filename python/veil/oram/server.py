"""`veil oram serve`: the store behind the Rust HTTP/TLS server (`veil_oram::http`, hyper +
tokio + rustls). This module only finds the secrets it needs: the access token (environment or a
file, never the command line) and the TLS identity `veil oram init` made."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from veil.core import ConfigError

TOKEN_FILE = "client.token"
FINGERPRINT_FILE = "tls.fingerprint"
TOKEN_ENV = "VEIL_ORAM_TOKEN"
KEY_FILE_ENV = "VEIL_ORAM_KEY_FILE"


def make_token(data_dir: Path, token_file: str | Path | None = None) -> str:
    """A fresh 128-bit token in `token_file`, else DATA_DIR/client.token (mode 0600)."""
    p = Path(token_file) if token_file else data_dir / TOKEN_FILE
    tok = secrets.token_hex(16)
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(tok + "\n")
    return tok


def _read_secret(path: Path, what: str) -> str:
    try:
        t = path.read_text().strip()
    except OSError as e:
        raise ConfigError(f"{what} {path}: {e.strerror or e}") from None
    if not t:
        raise ConfigError(f"{what} {path}: empty")
    return t


def _checked(token: str, where: str) -> str:
    from veil.oram.protocol import MIN_TOKEN_CHARS

    if len(token) < MIN_TOKEN_CHARS:
        raise ConfigError(f"access token from {where}: {len(token)} characters, at least {MIN_TOKEN_CHARS} "
                          "required (128 bits as hex; 'veil oram init' makes one)")
    return token


def find_token(token_file: str | None, data_dir: str | Path | None) -> str:
    """--token-file, else $VEIL_ORAM_TOKEN, else DATA_DIR/client.token; shorter than 128 bits
    (32 hex digits) is refused."""
    if token_file:
        return _checked(_read_secret(Path(token_file), "token file"), token_file)
    if os.environ.get(TOKEN_ENV):
        return _checked(os.environ[TOKEN_ENV].strip(), f"${TOKEN_ENV}")
    if data_dir is not None:
        return _checked(_read_secret(Path(data_dir) / TOKEN_FILE, "token file"), str(Path(data_dir) / TOKEN_FILE))
    raise ConfigError(f"no access token: --token-file, ${TOKEN_ENV} or --data-dir")


def find_key_file(key_file: str | None) -> str | None:
    """--key-file, else $VEIL_ORAM_KEY_FILE, else None (the key in DATA_DIR)."""
    return key_file or os.environ.get(KEY_FILE_ENV) or None


def read_fingerprint(data_dir: str | Path) -> str:
    return _read_secret(Path(data_dir) / FINGERPRINT_FILE, "certificate fingerprint")
