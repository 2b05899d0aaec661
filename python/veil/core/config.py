"""Experiment configs: TOML files validated by pydantic, `key=value` overrides, stable hashes.

A path a config names is an `InputFile` field: relative paths in a file resolve against that
file's folder (on the command line, against the working directory), and the config hash covers
the file's *content* instead of its path, so editing the file gives a new result, never a stale
cached one, and moving it elsewhere keeps the cache.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
import tomllib
import types
import typing
from pathlib import Path
from typing import Annotated, Any

from pydantic import (AfterValidator, BaseModel, ConfigDict, Field, ValidationError, ValidationInfo,
                      field_validator, model_validator)

from veil.core.errors import ConfigError
from veil.core.registry import REGISTRY, load_systems


MAX_CONFIG_BYTES = 4 << 20  # a config or sweep file; a bigger one is a mistake (or /dev/zero)


def _numeric_not_bool(annotation: Any) -> bool:
    """True for int/float fields (or optional ones) that do not also accept a bool."""
    args = typing.get_args(annotation) if typing.get_origin(annotation) in (typing.Union, types.UnionType) \
        else (annotation,)
    args = tuple(typing.get_args(a)[0] if typing.get_origin(a) is Annotated else a for a in args)
    return bool(set(args) & {int, float}) and bool not in args


def _accepts_str(annotation: Any) -> bool:
    args = typing.get_args(annotation) if typing.get_origin(annotation) in (typing.Union, types.UnionType) \
        else (annotation,)
    return any((typing.get_args(a)[0] if typing.get_origin(a) is Annotated else a) is str for a in args)


def _integer_only(annotation: Any) -> bool:
    args = typing.get_args(annotation) if typing.get_origin(annotation) in (typing.Union, types.UnionType) \
        else (annotation,)
    args = tuple(typing.get_args(a)[0] if typing.get_origin(a) is Annotated else a for a in args)
    return int in args and float not in args


def _is_bool(annotation: Any) -> bool:
    """True for a bool field (or an optional one)."""
    args = typing.get_args(annotation) if typing.get_origin(annotation) in (typing.Union, types.UnionType) \
        else (annotation,)
    return bool in args and not set(args) - {bool, type(None)}


class ConfigTable(BaseModel):
    """A table of a config (the experiment's own, or a nested one such as memnet's `[secure]`):
    booleans are not numbers (pydantic would read `true` as 1), strings are not numbers
    (pydantic would read '4' as 4) and a flag takes true or false only."""

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_as_number(cls, value: Any, info: ValidationInfo) -> Any:
        field = cls.model_fields.get(info.field_name or "")
        if field is None:
            return value
        if isinstance(value, bool) and _numeric_not_bool(field.annotation):
            raise ValueError(f"expected a number, got the boolean {str(value).lower()}")
        # pydantic would read the TOML string '4' as 4: a number is written as a number
        if isinstance(value, str) and _numeric_not_bool(field.annotation) and not _accepts_str(field.annotation):
            kind = "an integer" if _integer_only(field.annotation) else "a number"
            raise ValueError(f"expected {kind}, got the string {value!r} (write it without quotes)")
        # pydantic would read 1, "yes" or "on" as true: a flag takes true or false only
        if _is_bool(field.annotation) and not isinstance(value, bool) and value is not None:
            raise ValueError(f"expected true or false, got {value!r}")
        return value


class ExperimentConfig(ConfigTable):
    """Base of every experiment's config: unknown keys are errors, every run has a seed, numbers
    are finite and booleans are not numbers (pydantic would read `true` as 1)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, frozen=False, allow_inf_nan=False)

    seed: int = Field(1, ge=0, le=2**63 - 1, description="seed of every random stream in the run")

    @model_validator(mode="after")
    def _finite(self) -> "ExperimentConfig":
        bad = _non_finite(self.model_dump(mode="python"))
        if bad:
            raise ValueError(f"{bad}: must be a finite number (inf and nan are not allowed)")
        return self


def _non_finite(value: Any, path: str = "") -> str | None:
    """The dotted key of the first inf/nan anywhere in `value` (lists and dicts included)."""
    if isinstance(value, float) and not math.isfinite(value):
        return path or "(value)"
    if isinstance(value, dict):
        for k, v in value.items():
            hit = _non_finite(v, f"{path}.{k}" if path else str(k))
            if hit:
                return hit
    if isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            hit = _non_finite(v, f"{path}[{i}]")
            if hit:
                return hit
    return None


def ComponentName(kind: str):  # noqa: N802 - reads as a type in field annotations
    """A `str` field that must name a registered component of `kind`."""

    def check(name: str) -> str:
        known = REGISTRY.components.get(kind, {})
        if name not in known:
            raise ValueError(f"unknown {kind} '{name}'; known: {', '.join(sorted(known)) or '(none)'}")
        return name

    return Annotated[str, AfterValidator(check), Field(json_schema_extra={"component": kind})]


class InputPath(str):
    """A validated `InputFile` value: an absolute path to a readable file ("" means none)."""


class _InputFileMark:
    """Marks an `InputFile` field so paths in a config file can be found before validation."""


def _check_input_file(value: str) -> str:
    if value == "":
        return InputPath("")
    path = Path(os.path.expanduser(value))
    path = path if path.is_absolute() else Path.cwd() / path
    path = Path(os.path.normpath(path))
    if not path.exists():
        raise ValueError(f"no such file: {path}")
    if not path.is_file():
        raise ValueError(f"not a regular file: {path}")
    if not os.access(path, os.R_OK):
        raise ValueError(f"not readable: {path}")
    return InputPath(str(path))


InputFile = Annotated[str, AfterValidator(_check_input_file), _InputFileMark(),
                      Field(json_schema_extra={"input_file": True})]
"""A path a config names (topology file, trace, workload input). Relative paths in a config file
resolve against that file's folder; the file's content hash, not its path, enters the config hash.
"" means "no file"."""


def _is_input_file(annotation: Any, metadata: list | tuple = ()) -> bool:
    if any(isinstance(m, _InputFileMark) for m in metadata):
        return True
    return any(_is_input_file(a, getattr(a, "__metadata__", ())) for a in typing.get_args(annotation))


def _field_at(model: type[BaseModel], dotted: list[str]):
    """The pydantic field a dotted key names, or None."""
    for i, part in enumerate(dotted):
        field = model.model_fields.get(part)
        if field is None:
            return None
        if i == len(dotted) - 1:
            return field
        ann = field.annotation
        if not (isinstance(ann, type) and issubclass(ann, BaseModel)):
            return None
        model = ann
    return None


def _resolve(value: Any, base: Path) -> Any:
    if isinstance(value, str) and value and not Path(os.path.expanduser(value)).is_absolute():
        return str(base / value)
    if isinstance(value, list):
        return [_resolve(v, base) for v in value]
    return value


def resolve_input_paths(model: type[BaseModel], table: dict[str, Any], base: Path) -> dict[str, Any]:
    """`table` (raw config data, nested or with dotted keys) with every relative `InputFile`
    path made absolute against `base`, the folder of the file it was read from (a list, as in a
    sweep's grid, has each of its paths resolved)."""
    out: dict[str, Any] = {}
    for key, value in table.items():
        if isinstance(value, dict):
            field = _field_at(model, key.split("."))
            ann = getattr(field, "annotation", None)
            if isinstance(ann, type) and issubclass(ann, BaseModel):
                out[key] = resolve_input_paths(ann, value, base)
                continue
        field = _field_at(model, key.split("."))
        if field is not None and _is_input_file(field.annotation, field.metadata):
            value = _resolve(value, base)
        out[key] = value
    return out


_digests: dict[tuple, str] = {}


def file_digest(path: str) -> str:
    """SHA-256 of a file's content. Remembered while the file's identity, size and times stay
    put, but only for files last changed over 2 s ago: an edit within one timestamp tick of the
    last read would otherwise keep the old digest."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e.strerror}") from None
    key = (path, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    if key in _digests:
        return _digests[key]
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e.strerror}") from None
    if time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) > 2_000_000_000:
        _digests[key] = h.hexdigest()
    return h.hexdigest()


def _content_keyed(value: Any, dumped: Any) -> Any:
    """`dumped` (a model_dump of `value`) with every input file's path replaced by its content hash."""
    if isinstance(value, InputPath):
        return f"sha256:{file_digest(value)}" if value else ""
    if isinstance(value, BaseModel):
        return {k: _content_keyed(getattr(value, k, None), v) for k, v in dumped.items()}
    if isinstance(value, (list, tuple)) and isinstance(dumped, list):
        return [_content_keyed(v, d) for v, d in zip(value, dumped)]
    if isinstance(value, dict) and isinstance(dumped, dict):
        return {k: _content_keyed(value.get(k), d) for k, d in dumped.items()}
    return dumped


def _loc(loc: tuple) -> str:
    return ".".join(str(p) for p in loc) or "(top level)"


def format_validation_error(err: ValidationError, model: type[BaseModel], where: str = "") -> str:
    """One line naming each bad key by its dotted path and what is allowed."""
    parts = []
    for e in err.errors(include_url=False):
        key = _loc(e["loc"])
        kind = e["type"]
        if kind == "extra_forbidden":
            allowed = ", ".join(_allowed_keys(model, e["loc"][:-1]))
            parts.append(f"{key}: unknown key; allowed: {allowed}")
        elif kind == "missing":
            parts.append(f"{key}: required key is missing")
        elif kind == "value_error" and not e["loc"]:
            parts.append(e["msg"].removeprefix("Value error, "))
        else:
            msg = e["msg"].removeprefix("Value error, ")
            got = e.get("input")
            if kind not in ("value_error",) and not isinstance(got, (dict, list)):
                msg = f"{msg} (got {got!r})"
            parts.append(f"{key}: {msg}")
    prefix = f"{where}: " if where else ""
    return prefix + "; ".join(parts)


def _allowed_keys(model: type[BaseModel], loc: tuple) -> list[str]:
    for part in loc:
        field = model.model_fields.get(str(part))
        ann = getattr(field, "annotation", None) if field else None
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            model = ann
        else:
            return []
    return sorted(model.model_fields)


def read_toml(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    if not p.exists():
        raise ConfigError(f"{p}: no such file")
    if p.is_dir():
        raise ConfigError(f"{p}: is a directory, expected a TOML file")
    if not p.is_file():
        raise ConfigError(f"{p}: not a regular file (a device or pipe?), expected a TOML file")
    try:
        size = p.stat().st_size
    except OSError as e:
        raise ConfigError(f"{p}: cannot read: {e.strerror}") from None
    if size > MAX_CONFIG_BYTES:
        raise ConfigError(f"{p}: {size} bytes is too large for a config (limit {MAX_CONFIG_BYTES})")
    try:
        return tomllib.loads(p.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{p}: malformed TOML: {e}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{p}: cannot read: {e}") from None


def parse_value(text: str) -> Any:
    """A TOML literal (`3`, `0.5`, `true`, `[1, 2]`, `"x"`), else the bare string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def set_dotted(target: dict[str, Any], dotted: str, value: Any) -> None:
    keys = dotted.split(".")
    if not all(keys):
        raise ConfigError(f"override '{dotted}': empty key segment")
    node = target
    for k in keys[:-1]:
        nxt = node.setdefault(k, {})
        if not isinstance(nxt, dict):
            raise ConfigError(f"override '{dotted}': '{k}' is not a table")
        node = nxt
    node[keys[-1]] = value


def apply_overrides(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    out = json.loads(json.dumps(data))
    for item in overrides:
        if "=" not in item:
            raise ConfigError(f"override '{item}': expected key=value")
        key, _, raw = item.partition("=")
        set_dotted(out, key.strip(), parse_value(raw.strip()))
    return out


def check_override_keys(model: type[BaseModel], overrides: list[str], where: str) -> None:
    """An override `a.b.c=1` must name a path of nested tables: blame the segment that is not one
    (rather than the field `a` for receiving a table)."""
    for item in overrides:
        key = item.partition("=")[0].strip()
        parts = key.split(".")
        node: type[BaseModel] | None = model
        for i, part in enumerate(parts[:-1]):
            field = node.model_fields.get(part) if node else None
            if field is None:
                break  # an unknown key: validation names it with the allowed ones
            ann = field.annotation
            if isinstance(ann, type) and issubclass(ann, BaseModel):
                node = ann
                continue
            if typing.get_origin(ann) is dict or ann is dict:
                break
            prefix = ".".join(parts[: i + 1])
            raise ConfigError(f"{where}: override '{item}': {prefix} is a value, not a table, so "
                              f"'{key}' names nothing")


def validate(experiment: str, data: dict[str, Any], where: str = "") -> ExperimentConfig:
    """Validates `data` (without the `experiment` key) against the experiment's config model."""
    exp = REGISTRY.experiment(experiment)
    try:
        return exp.config.model_validate(data)
    except ValidationError as e:
        raise ConfigError(format_validation_error(e, exp.config, where or experiment)) from None


def split_experiment(data: dict[str, Any], where: str) -> tuple[str, dict[str, Any]]:
    name = data.get("experiment")
    if name is None:
        load_systems()
        raise ConfigError(f"{where}: experiment: required key is missing; known: {', '.join(sorted(REGISTRY.experiments))}")
    if not isinstance(name, str):
        raise ConfigError(f"{where}: experiment: expected a string (got {name!r})")
    REGISTRY.experiment(name)
    rest = {k: v for k, v in data.items() if k != "experiment"}
    return name, rest


def load_config(path: str | Path, overrides: list[str] | None = None) -> tuple[str, ExperimentConfig]:
    raw = read_toml(path)
    name = raw.get("experiment")
    if isinstance(name, str) and REGISTRY.has_experiment(name):
        model = REGISTRY.experiments[name].config
        tables = [t for t in ("base", "grid", "zip") if isinstance(raw.get(t), dict) and t not in model.model_fields]
        if tables:
            raise ConfigError(f"{path}: a sweep file ([{tables[0]}] table), not a run config; "
                              f"use `veil sweep {path}`")
        raw = resolve_input_paths(model, raw, Path(path).resolve().parent)
    data = apply_overrides(raw, overrides or [])
    name, rest = split_experiment(data, str(path))
    check_override_keys(REGISTRY.experiment(name).config, overrides or [], str(path))
    return name, validate(name, rest, str(path))


def load_run(source: str | Path, overrides: list[str] | None = None) -> tuple[str, ExperimentConfig]:
    """`veil run SOURCE k=v ...`: SOURCE is a TOML config file, or an experiment's name (its
    defaults, as gem5 and SST run without a file) when no file of that name exists."""
    if not Path(source).exists() and REGISTRY.has_experiment(str(source)):
        return config_from_data({"experiment": str(source)}, overrides, str(source))
    text = str(source)
    if not Path(source).exists() and "/" not in text and not text.endswith(".toml") and "." in text:
        # Read as an experiment's name (SYSTEM.NAME), not as a missing file.
        raise ConfigError(f"{REGISTRY.unknown_experiment(text)}; and no file {text} exists")
    return load_config(source, overrides)


def config_from_data(data: dict[str, Any], overrides: list[str] | None = None,
                     where: str = "config") -> tuple[str, ExperimentConfig]:
    """A validated config from plain data with `experiment = NAME` (the Python API's dicts)."""
    data = apply_overrides(data, overrides or [])
    name, rest = split_experiment(data, where)
    check_override_keys(REGISTRY.experiment(name).config, overrides or [], where)
    return name, validate(name, rest, where)


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def config_hash(experiment: str, cfg: ExperimentConfig) -> str:
    """Stable across runs and machines: the experiment name and every field, defaults included;
    an input file counts by its content, not its path."""
    blob = canonical_json({"experiment": experiment,
                           "config": _content_keyed(cfg, cfg.model_dump(mode="json"))})
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def json_key_at(text: str, line: int, column: int) -> str | None:
    """The dotted key whose value sits at (line, column) of the JSON `text` (1-based, as serde
    reports them), so a native "expected u32 at line 1 column 1105" can name the config field."""
    lines = text.split("\n")
    if not 1 <= line <= len(lines):
        return None
    end = sum(len(x) + 1 for x in lines[:line - 1]) + column
    frames: list[list] = []  # per open container: ["{", last key] or ["[", index]
    i, in_str, start = 0, False, 0
    while i < min(end, len(text)):
        ch = text[i]
        if in_str:
            if ch == "\\":
                i += 1
            elif ch == '"':
                in_str = False
                if frames and frames[-1][0] == "{" and text[i + 1:].lstrip().startswith(":"):
                    frames[-1][1] = text[start:i]
        elif ch == '"':
            in_str, start = True, i + 1
        elif ch in "{[":
            frames.append([ch, None if ch == "{" else 0])
        elif ch in "}]" and frames:
            frames.pop()
        elif ch == "," and frames and frames[-1][0] == "[":
            frames[-1][1] += 1
        i += 1
    out = ""
    for kind, seg in frames:
        if seg is None:
            break
        out += f"[{seg}]" if kind == "[" else (f".{seg}" if out else str(seg))
    return out or None


def name_serde_error(message: str, text: str) -> str:
    """`message` with "at line L column C" replaced by the field it points at in `text`."""
    import re

    m = re.search(r" at line (\d+) column (\d+)", message)
    if not m:
        return message
    key = json_key_at(text, int(m.group(1)), int(m.group(2)))
    return f"{key}: {message[:m.start()]}{message[m.end():]}" if key else message
