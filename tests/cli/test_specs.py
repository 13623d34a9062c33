"""The command line's mechanism options are read from the mechanisms' own constructors: which
option applies to which mechanism, and what a column spec passes to it."""

from __future__ import annotations

import inspect
import json

import pyarrow as pa
import pytest

from frameldp.cli._specs import ColumnSpec, build_mechanism, mechanism_options
from frameldp.core.mechanisms import mechanism_class, mechanism_names
from frameldp.errors import ParameterError


def test_the_mechanism_specific_options_are_those_some_constructor_takes():
    assert mechanism_options() == {
        "max_weight",
        "num_bits",
        "num_hashes",
        "num_cohorts",
        "max_length",
        "bounds",
        "clip",
        "levels",
        "buckets",
    }


@pytest.mark.parametrize("name", mechanism_names())
def test_an_option_applies_exactly_where_the_constructor_takes_it(name):
    taken = set(inspect.signature(mechanism_class(name)).parameters)
    spec = ColumnSpec("c", name, 1.0)
    for option in mechanism_options():
        assert spec.uses(option) == (option in taken), option


def test_a_column_spec_passes_its_options_to_the_mechanism():
    bloom = build_mechanism(
        ColumnSpec("u", "bloom", 1.0, epsilon_infinity=2.0, num_bits=32, num_cohorts=4),
        pa.string(),
    )
    assert (bloom.num_bits, bloom.num_cohorts) == (32, 4)  # type: ignore[attr-defined]
    pem = build_mechanism(ColumnSpec("q", "pem", 2.0, max_length=5), pa.string())
    assert pem.max_length == 5  # type: ignore[attr-defined]
    sets = build_mechanism(
        ColumnSpec("s", "rappor", 1.0, domain=("a", "b", "c"), max_weight=2), pa.list_(pa.string())
    )
    assert sets.max_weight == 2  # type: ignore[attr-defined]


def test_an_option_of_another_mechanism_is_refused():
    with pytest.raises(ParameterError, match="--max-weight applies to rappor only"):
        build_mechanism(ColumnSpec("c", "krr", 1.0, domain=("a", "b"), max_weight=2), pa.string())


def test_which_options_apply_does_not_depend_on_other_registered_mechanisms(monkeypatch):
    """(Attack review) A plugin mechanism whose constructor takes ``nulls`` must not make
    ``--nulls`` a mechanism-specific option that k-RR refuses."""
    from frameldp.core.mechanisms import registry

    class Plugin:
        def __init__(self, epsilon: float, nulls: str = "raise", unknown: str = "raise"):
            pass

    monkeypatch.setitem(registry._REGISTRY, "plugin", Plugin)
    assert ColumnSpec("c", "krr", 1.0, nulls="category").uses("nulls")
    assert "nulls" not in mechanism_options()


def test_epsilon_infinity_is_refused_where_nothing_is_memoized():
    with pytest.raises(ParameterError, match="no permanent response to memoize"):
        build_mechanism(ColumnSpec("q", "pem", 1.0, epsilon_infinity=2.0), pa.string())


@pytest.mark.parametrize("option", ["unknown", "nulls"])
def test_domain_options_do_not_apply_to_an_open_domain(option, tmp_path):
    """(Newcomer review) ``--nulls``/``--unknown`` were accepted and ignored for ``pem`` and
    ``bloom``, whose domains are open."""
    from frameldp.cli._specs import specs_from_file, specs_from_options

    for mechanism in ("pem", "bloom"):
        assert not ColumnSpec("q", mechanism, 1.0).uses(option)
        with pytest.raises(ParameterError, match="does not apply"):
            specs_from_options(["q"], [mechanism], [1.0], [], **{option: "other"})
    spec = tmp_path / "job.json"
    spec.write_text(json.dumps({"q": {"mechanism": "pem", "epsilon": 1.0, option: "raise"}}))
    with pytest.raises(ParameterError, match="does not apply to pem"):
        specs_from_file(spec)
