"""``@frozen`` (core/values.py) behaves as ``@dataclass(frozen=True)`` does: each test
builds the same class both ways and asks both the same questions."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from librarian.core.values import frozen


def twins(body: dict[str, Any], annotations: dict[str, str],
          **options: Any) -> tuple[type, type]:
    """The class ``Shape`` made by ``dataclass(frozen=True, **options)`` and by
    ``frozen(**options)``, from the same body."""
    made = []
    for decorate in (dataclass(frozen=True, **options), frozen(**options)):
        namespace = {**body, "__annotations__": dict(annotations), "__module__": __name__,
                     "__qualname__": "Shape"}
        made.append(decorate(type("Shape", (), namespace)))
    return made[0], made[1]


PLAIN = {"name": "str", "size": "int", "tags": "tuple[str, ...]"}


def test_values_compare_hash_and_show_as_dataclasses_do() -> None:
    for cls in twins({}, PLAIN):
        a, b, c = cls("x", 1, ("t",)), cls("x", 1, ("t",)), cls("x", 2, ("t",))
        assert a == b and hash(a) == hash(b) and a != c
        assert len({a, b, c}) == 2
        assert a != ("x", 1, ("t",))  # not a tuple, unlike a NamedTuple
    real, ours = twins({}, PLAIN)
    assert repr(ours("x", 1, ("t",))) == repr(real("x", 1, ("t",))) == \
        "Shape(name='x', size=1, tags=('t',))"
    assert ours("x", 1, ()) != real("x", 1, ())  # another class: never equal
    assert ours.__match_args__ == real.__match_args__ == ("name", "size", "tags")


def test_fields_cannot_be_assigned_or_deleted() -> None:
    for cls in twins({}, PLAIN):
        item = cls("x", 1, ())
        with pytest.raises(dataclasses.FrozenInstanceError):
            item.size = 2
        with pytest.raises(dataclasses.FrozenInstanceError):
            del item.name
        with pytest.raises(dataclasses.FrozenInstanceError):
            item.other = 1
        assert item.size == 1


def test_defaults_factories_and_keywords() -> None:
    body = {"size": 0, "tags": field(default_factory=list)}
    for cls in twins(body, PLAIN):
        one, two = cls("x"), cls(name="y", tags=["a"])
        assert (one.size, one.tags, two.size, two.tags) == (0, [], 0, ["a"])
        assert cls("z").tags is not one.tags  # a fresh list each time
        assert cls("x", size=3) == cls("x", 3, [])


def test_wrong_arguments_are_type_errors() -> None:
    for cls in twins({"size": 0, "tags": ()}, PLAIN):
        for call in (lambda c: c(), lambda c: c("x", 1, (), 4),
                     lambda c: c("x", name="y"), lambda c: c("x", colour=1)):
            with pytest.raises(TypeError):
                call(cls)


def test_derived_fields_and_post_init() -> None:
    def post_init(self: Any) -> None:
        object.__setattr__(self, "total", self.size * 2)

    body = {"__post_init__": post_init, "total": field(init=False, default=-1),
            "note": field(init=False, default="n"),
            "seen": field(init=False, default_factory=list)}
    annotations = {"size": "int", "total": "int", "note": "str", "seen": "list[str]"}
    real, ours = twins(body, annotations)
    assert repr(ours(3)) == repr(real(3)) == "Shape(size=3, total=6, note='n', seen=[])"
    assert vars(ours(3)) == vars(real(3))
    assert ours(3) == ours(3)
    with pytest.raises(TypeError):
        ours(3, 4)


def test_a_field_without_default_after_one_with_is_refused() -> None:
    for decorate in (dataclass(frozen=True), frozen):
        with pytest.raises(TypeError, match="non-default argument 'tags' follows default"):
            decorate(type("Shape", (), {"__annotations__": dict(PLAIN), "size": 0,
                                        "__module__": __name__}))


def test_compare_and_repr_options() -> None:
    body = {"note": field(default="", compare=False, repr=False)}
    annotations = {"name": "str", "note": "str"}
    for cls in twins(body, annotations):
        assert cls("x", "a") == cls("x", "b") and hash(cls("x", "a")) == hash(cls("x", "b"))
        assert repr(cls("x", "a")) == "Shape(name='x')"


def test_a_field_left_out_of_the_hash() -> None:
    body = {"note": field(default="", hash=False)}
    annotations = {"name": "str", "note": "str"}
    for cls in twins(body, annotations):
        assert cls("x", "a") != cls("x", "b") and hash(cls("x", "a")) == hash(cls("x", "b"))


def test_keyword_only_fields_are_refused() -> None:
    with pytest.raises(TypeError, match="keyword-only"):
        frozen(type("Shape", (), {"__annotations__": {"name": "str"}, "__module__": __name__,
                                  "name": field(kw_only=True)}))


def test_eq_false_is_identity() -> None:
    for cls in twins({}, PLAIN, eq=False):
        a, b = cls("x", 1, ()), cls("x", 1, ())
        assert a == a and a != b and hash(a) == object.__hash__(a)


def test_own_methods_win() -> None:
    def own_eq(self: Any, other: object) -> bool:
        return True

    def own_repr(self: Any) -> str:
        return "mine"

    for cls in twins({"__eq__": own_eq, "__repr__": own_repr}, PLAIN):
        a, b = cls("x", 1, ()), cls("y", 2, ())
        assert a == b and repr(a) == "mine"
        assert hash(a) == hash(cls("x", 1, ()))  # hashed by its fields, as dataclass does


def test_dataclass_tools_work() -> None:
    real, ours = twins({"size": 0, "tags": ()}, PLAIN)
    item = ours("x", 1, ("t",))
    assert [f.name for f in dataclasses.fields(item)] == ["name", "size", "tags"]
    assert dataclasses.asdict(item) == dataclasses.asdict(real("x", 1, ("t",)))
    changed = dataclasses.replace(item, size=5)
    assert changed == ours("x", 5, ("t",)) and item.size == 1
    assert dataclasses.is_dataclass(item)
    assert copy.copy(item) == item and copy.deepcopy(item) == item


def test_subclasses_inherit_fields() -> None:
    @frozen
    class Base:
        name: str
        size: int = 0

    @frozen
    class Child(Base):
        extra: str = ""

    child = Child("x", 1, "e")
    assert repr(child) == "test_subclasses_inherit_fields.<locals>.Child(name='x', size=1, " \
        "extra='e')"
    assert child == Child("x", 1, "e") and child != Base("x", 1)
    assert Child("y").size == 0


@frozen
class Pickled:
    name: str
    size: int


def test_pickle_round_trip() -> None:
    item = Pickled("x", 1)
    assert pickle.loads(pickle.dumps(item)) == item


values = st.one_of(st.integers(), st.text(max_size=5), st.none(),
                   st.tuples(st.integers()), st.binary(max_size=4))


@given(st.lists(st.tuples(values, values, values), min_size=1, max_size=6))
def test_twins_agree_on_any_values(rows: list[tuple[Any, Any, Any]]) -> None:
    real, ours = twins({}, PLAIN)
    for left in rows:
        assert repr(ours(*left)) == repr(real(*left))
        for right in rows:
            assert (ours(*left) == ours(*right)) == (real(*left) == real(*right))
        assert hash(ours(*left)) == hash(ours(*left))
    assert len({ours(*row) for row in rows}) == len({real(*row) for row in rows})
