"""Experiment configs: TOML files validated by pydantic, `key=value` overrides, stable hashes."""

from __future__ import annotations

import hashlib
import json
import tomllib
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from veil.core.errors import ConfigError
from veil.core.registry import REGISTRY, load_systems


class ExperimentConfig(BaseModel):
    """Base of every experiment's config: unknown keys are errors, every run has a seed."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, frozen=False)

    seed: int = Field(1, ge=0, le=2**63 - 1, description="seed of every random stream in the run")


def ComponentName(kind: str):  # noqa: N802 - reads as a type in field annotations
    """A `str` field that must name a registered component of `kind`."""

    def check(name: str) -> str:
        known = REGISTRY.components.get(kind, {})
        if name not in known:
            raise ValueError(f"unknown {kind} '{name}'; known: {', '.join(sorted(known)) or '(none)'}")
        return name

    return Annotated[str, AfterValidator(check), Field(json_schema_extra={"component": kind})]


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


def validate(experiment: str, data: dict[str, Any], where: str = "") -> ExperimentConfig:
    """Validates `data` (without the `experiment` key) against the experiment's config model."""
    exp = REGISTRY.experiment(experiment)
    try:
        return exp.config.model_validate(data)
    except ValidationError as e:
        raise ConfigError(format_validation_error(e, exp.config, where or experiment)) from None


def split_experiment(data: dict[str, Any], where: str) -> tuple[str, dict[str, Any]]:
    load_systems()
    name = data.get("experiment")
    if name is None:
        raise ConfigError(f"{where}: experiment: required key is missing; known: {', '.join(sorted(REGISTRY.experiments))}")
    if not isinstance(name, str):
        raise ConfigError(f"{where}: experiment: expected a string (got {name!r})")
    REGISTRY.experiment(name)
    rest = {k: v for k, v in data.items() if k != "experiment"}
    return name, rest


def load_config(path: str | Path, overrides: list[str] | None = None) -> tuple[str, ExperimentConfig]:
    data = apply_overrides(read_toml(path), overrides or [])
    name, rest = split_experiment(data, str(path))
    return name, validate(name, rest, str(path))


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def config_hash(experiment: str, cfg: ExperimentConfig) -> str:
    """Stable across runs and machines: the experiment name and every field, defaults included."""
    blob = canonical_json({"experiment": experiment, "config": cfg.model_dump(mode="json")})
    return hashlib.sha256(blob.encode()).hexdigest()[:16]
