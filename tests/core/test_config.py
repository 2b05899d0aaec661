import pytest
from pydantic import Field

from veil.core import ComponentName, ConfigError, ExperimentConfig, register_component
from veil.core.config import apply_overrides, config_hash, format_validation_error, parse_value, validate
from veil.core.registry import REGISTRY, register_experiment

register_component("testkind.widget", "alpha", doc="first")
register_component("testkind.widget", "beta", doc="second")


class Inner(ExperimentConfig):
    depth: int = Field(4, ge=1, le=64, description="buffer depth")


class DemoConfig(ExperimentConfig):
    rate: float = Field(0.1, gt=0, le=1, description="injection rate")
    widget: ComponentName("testkind.widget") = "alpha"
    router: Inner = Inner()


@register_experiment("testdemo.echo", DemoConfig, doc="returns its config")
def echo(cfg: DemoConfig) -> dict:
    return cfg.model_dump()


def err_of(data: dict) -> str:
    with pytest.raises(ConfigError) as e:
        validate("testdemo.echo", data)
    return str(e.value)


def test_valid_config_gets_defaults():
    cfg = validate("testdemo.echo", {"rate": 0.5})
    assert cfg.rate == 0.5 and cfg.widget == "alpha" and cfg.router.depth == 4 and cfg.seed == 1


def test_unknown_key_names_path_and_allowed_keys():
    msg = err_of({"router": {"dpeth": 3}})
    assert "router.dpeth: unknown key; allowed: depth, seed" in msg
    assert "\n" not in msg


def test_wrong_type_names_key_and_value():
    msg = err_of({"rate": "fast"})
    assert msg.startswith("testdemo.echo: rate: ") and "'fast'" in msg


def test_out_of_range_states_bound():
    msg = err_of({"router": {"depth": 0}})
    assert "router.depth" in msg and "greater than or equal to 1" in msg


def test_unknown_component_lists_known():
    msg = err_of({"widget": "gamma"})
    assert "widget: unknown testkind.widget 'gamma'; known: alpha, beta" in msg


def test_registry_lookup_errors_list_names():
    with pytest.raises(ConfigError, match="known: alpha, beta"):
        REGISTRY.component("testkind.widget", "zeta")
    with pytest.raises(ConfigError, match="unknown experiment 'nope'"):
        REGISTRY.experiment("nope")


def test_overrides_parse_toml_literals_and_dotted_paths():
    assert parse_value("3") == 3 and parse_value("0.5") == 0.5 and parse_value("true") is True
    assert parse_value("[1, 2]") == [1, 2] and parse_value("dor") == "dor"
    data = apply_overrides({"rate": 0.1}, ["router.depth=8", "widget=beta", "rate=0.3"])
    assert data == {"rate": 0.3, "router": {"depth": 8}, "widget": "beta"}
    with pytest.raises(ConfigError, match="expected key=value"):
        apply_overrides({}, ["oops"])
    with pytest.raises(ConfigError, match="'rate' is not a table"):
        apply_overrides({"rate": 1}, ["rate.x=2"])


def test_config_hash_is_stable_and_sensitive():
    a = validate("testdemo.echo", {"rate": 0.2})
    b = validate("testdemo.echo", {"rate": 0.2, "widget": "alpha"})  # a default spelled out
    c = validate("testdemo.echo", {"rate": 0.2, "seed": 2})
    assert config_hash("testdemo.echo", a) == config_hash("testdemo.echo", b)
    assert config_hash("testdemo.echo", a) != config_hash("testdemo.echo", c)
    assert len(config_hash("testdemo.echo", a)) == 16


def test_missing_required_key_reported():
    class Req(ExperimentConfig):
        n: int = Field(description="required")

    from pydantic import ValidationError

    with pytest.raises(ValidationError) as e:
        Req.model_validate({})
    assert format_validation_error(e.value, Req) == "n: required key is missing"
