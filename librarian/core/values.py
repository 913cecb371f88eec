"""``@frozen``: a frozen dataclass whose methods are compiled once, with this module.

``dataclasses.dataclass(frozen=True)`` writes ``__init__``, ``__repr__``, ``__eq__``,
``__hash__``, ``__setattr__`` and ``__delattr__`` of every class as source text and
compiles them when the class is defined: ~3.8 million instructions a class (callgrind,
CPython 3.11); an update of 10 of 1,000 items, which defines some 50 such classes and
makes a few of each, went from 932 to 807 million instructions without it. ``@frozen``
lets ``dataclasses`` collect the fields (so ``fields``, ``replace``, ``asdict`` and type
checkers see a frozen dataclass) and generates nothing: the methods below read each
class's fields from a spec built once. The same semantics, kept by tests/test_values.py
against ``dataclass``: value equality within a class, the hash of the hashed fields,
dataclass's ``repr``, frozen fields, defaults, ``default_factory``, ``init=False`` fields
and ``__post_init__``; a keyword-only field is refused.

A class made by the thousand in one command keeps ``@dataclass(frozen=True, slots=True)``:
its generated ``__init__`` is faster per instance (0.56 against 0.89 us positional).

Imports the standard library only.
"""

from __future__ import annotations

import dataclasses
import reprlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, overload

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:
    def dataclass_transform(**_: object) -> Callable[[Any], Any]:
        return lambda decorated: decorated

_Class = TypeVar("_Class", bound=type)

#: A field with no default: ``dataclasses.MISSING``.
_MISSING: Any = dataclasses.MISSING


class _Spec:
    """What the shared methods need to know of one class, built when it is decorated."""

    __slots__ = ("names", "arity", "plain", "defaults", "derived", "key", "hash_key",
                 "shown", "post_init")

    names: tuple[str, ...]
    arity: int
    plain: bool
    defaults: dict[str, tuple[Any, Any]]
    derived: tuple[tuple[str, Any], ...]  # (name, default_factory)
    key: Callable[[object], tuple[Any, ...]]
    hash_key: Callable[[object], tuple[Any, ...]]
    shown: tuple[str, ...]
    post_init: bool

    def __init__(self, cls: type) -> None:
        fields = dataclasses.fields(cls)
        init = [f for f in fields if f.init]
        if any(getattr(f, "kw_only", False) is True for f in fields):
            raise TypeError(f"{cls.__qualname__}: @frozen takes no keyword-only field")
        seen_default = False  # refused as dataclass refuses it, which writes __init__
        for f in init:
            if _has_default(f):
                seen_default = True
            elif seen_default:
                raise TypeError(f"non-default argument {f.name!r} follows default argument")
        self.names = tuple(f.name for f in init)
        self.arity = len(init)
        #: name -> (default, factory) of the init fields that have one
        self.defaults = {f.name: (f.default, f.default_factory) for f in init
                         if _has_default(f)}
        #: init=False fields with a default_factory, set by ``__init__`` as dataclass sets
        #: them (one with a plain default is read from the class, as there)
        self.derived = tuple((f.name, f.default_factory) for f in fields
                             if not f.init and f.default_factory is not _MISSING)
        self.plain = not self.derived
        self.key = _getter(tuple(f.name for f in fields if f.compare))
        # dataclass hashes the compared fields, unless a field says otherwise
        self.hash_key = _getter(tuple(f.name for f in fields
                                      if (f.compare if f.hash is None else f.hash)))
        self.shown = tuple(f.name for f in fields if f.repr)
        self.post_init = hasattr(cls, "__post_init__")


def _has_default(field: dataclasses.Field[Any]) -> bool:
    return field.default is not _MISSING or field.default_factory is not _MISSING


def _getter(names: tuple[str, ...]) -> Callable[[object], tuple[Any, ...]]:
    """The tuple of ``names``' values of an instance (a tuple even for one name)."""
    if len(names) == 1:
        only = names[0]
        return lambda instance: (getattr(instance, only),)
    return lambda instance: tuple(getattr(instance, name) for name in names)


def _init(self: Any, *args: Any, **kwargs: Any) -> None:
    spec: _Spec = self.__value_spec__
    if not kwargs and len(args) == spec.arity and spec.plain:
        self.__dict__.update(zip(spec.names, args, strict=True))
    else:
        _bind(self, spec, args, kwargs)
    if spec.post_init:
        self.__post_init__()


def _bind(self: Any, spec: _Spec, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    name = type(self).__qualname__
    if len(args) > spec.arity:
        raise TypeError(f"{name}() takes {spec.arity} positional arguments but "
                        f"{len(args)} were given")
    values = dict(zip(spec.names, args, strict=False))  # fewer args: defaults
    for key, given in kwargs.items():
        if key not in spec.names:
            raise TypeError(f"{name}() got an unexpected keyword argument {key!r}")
        if key in values:
            raise TypeError(f"{name}() got multiple values for argument {key!r}")
        values[key] = given
    state = self.__dict__
    for field in spec.names:
        if field in values:
            state[field] = values[field]
            continue
        default = spec.defaults.get(field)
        if default is None:
            raise TypeError(f"{name}() missing required argument {field!r}")
        state[field] = default[1]() if default[0] is _MISSING else default[0]
    for field, factory in spec.derived:
        state[field] = factory()


@reprlib.recursive_repr()
def _repr(self: Any) -> str:
    spec: _Spec = self.__value_spec__
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in spec.shown)
    return f"{type(self).__qualname__}({shown})"


def _eq(self: Any, other: Any) -> Any:  # a bool, or NotImplemented for another class
    if other.__class__ is not self.__class__:
        return NotImplemented
    key: Callable[[object], tuple[Any, ...]] = self.__value_spec__.key
    return key(self) == key(other)


def _hash(self: Any) -> int:
    return hash(self.__value_spec__.hash_key(self))


def _setattr(self: Any, name: str, value: object) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")


def _delattr(self: Any, name: str) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")


@overload
def frozen(cls: _Class, /) -> _Class: ...
@overload
def frozen(*, eq: bool = True) -> Callable[[_Class], _Class]: ...


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field,))
def frozen(cls: _Class | None = None, /, *, eq: bool = True) -> Any:
    """A frozen dataclass without generated code (module docstring); ``eq=False``: equal
    only to itself, hashed by identity, as ``dataclass(eq=False)``."""

    def decorate(cls: _Class) -> _Class:
        # Only the fields are collected: no method is written (init, repr, eq off).
        made: Any = dataclasses.dataclass(init=False, repr=False, eq=False)(cls)
        own = made.__dict__
        made.__value_spec__ = _Spec(made)
        methods: dict[str, Callable[..., Any]] = {
            "__init__": _init, "__repr__": _repr, "__setattr__": _setattr,
            "__delattr__": _delattr}
        if eq:
            methods["__eq__"] = _eq
            # A class that defines __eq__ alone has __hash__ set to None by Python.
            if own.get("__hash__", None) is None:
                methods["__hash__"] = _hash
        for name, method in methods.items():
            if name == "__hash__" or name not in own:  # the class's own methods win
                setattr(made, name, method)
        return made  # type: ignore[no-any-return]

    return decorate if cls is None else decorate(cls)
