"""The mechanism registry: every mechanism class by its spec's ``"mechanism"`` name.

A mechanism module decorates its class with ``@register("<name>")``; the frame shortcuts
(``df.ldp.rappor``, ``krr``), the command line and the report files then build and rebuild
mechanisms by name (:func:`mechanism_class`, :func:`mechanism_from_spec`) without naming their
classes. The registry holds :class:`~frameldp.core.mechanisms.protocol.Mechanism` classes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar, cast

from frameldp.core.mechanisms.protocol import Mechanism, MechanismClass
from frameldp.errors import ParameterError, shown

__all__ = [
    "is_mechanism",
    "mechanism_class",
    "mechanism_from_spec",
    "mechanism_names",
    "register",
]

_REGISTRY: dict[str, MechanismClass] = {}
_M = TypeVar("_M")


def register(name: str) -> Callable[[type[_M]], type[_M]]:
    """Class decorator: make ``mechanism_from_spec`` able to rebuild ``name`` specs."""

    def decorate(cls: type[_M]) -> type[_M]:
        _REGISTRY[name] = cast(MechanismClass, cls)
        return cls

    return decorate


def mechanism_from_spec(spec: dict[str, Any] | str) -> Mechanism:
    """Rebuild a mechanism from its spec (a dict or its JSON text)."""
    try:
        data = json.loads(spec) if isinstance(spec, str) else spec
    except ValueError as error:
        raise ParameterError(f"mechanism spec is not valid JSON: {error}") from None
    name = data.get("mechanism") if isinstance(data, dict) else None
    if not isinstance(name, str) or name not in _REGISTRY:
        raise ParameterError(
            f"unknown mechanism in spec: {shown(name)}; known: {sorted(_REGISTRY)}"
        )
    if "collection" in data:  # one column of a sampled collection (frameldp.core.collected)
        from frameldp.core.collected import Collected
        from frameldp.core.collection import Collection

        inner = {key: value for key, value in data.items() if key != "collection"}
        collection = data["collection"]
        column = collection.get("column") if isinstance(collection, dict) else None
        if not isinstance(column, str):
            raise ParameterError(f"a recorded collection names no column: {shown(collection)}")
        wrapped = Collected(mechanism_from_spec(inner), Collection.from_spec(collection), column)
        return wrapped  # type: ignore[return-value]
    try:
        return _REGISTRY[name].from_spec(data)
    except (KeyError, TypeError, AttributeError) as error:  # a field missing or of a wrong shape
        raise ParameterError(
            f"invalid {name} spec: a field is missing or malformed "
            f"({type(error).__name__}: {shown(error.args[0] if error.args else None)})"
        ) from None


def mechanism_class(name: str) -> MechanismClass:
    """The mechanism class registered as ``name`` (the spec's ``"mechanism"``): how the frame
    shortcuts (``df.ldp.rappor``, ``krr``, ...) and the command line build mechanisms without
    naming their classes."""
    if name not in _REGISTRY:
        raise ParameterError(f"unknown mechanism {shown(name)}; known: {sorted(_REGISTRY)}")
    return _REGISTRY[name]


def mechanism_names() -> list[str]:
    """The names of every registered mechanism (the spec's ``"mechanism"``), sorted."""
    return sorted(_REGISTRY)


def is_mechanism(value: object) -> bool:
    """Whether ``value`` is an instance of a registered frameldp mechanism (or one column of
    a sampled collection of them, :class:`~frameldp.core.collected.Collected`)."""
    inner = getattr(value, "collection", None) and getattr(value, "mechanism", None)
    return isinstance(inner or value, tuple(cast(type, cls) for cls in _REGISTRY.values()))
