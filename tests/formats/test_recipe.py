from __future__ import annotations

import math

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from librarian.core.manifests import RecipeEffects, RecipeInput
from librarian.errors import LibrarianError, UsageError, ValidationError
from librarian.formats.recipe import coerce_input, input_env_name, parse_recipe

FAST = settings(max_examples=60, deadline=None, database=None)

SPEC_EXAMPLE = b"""\
name: review-change
description: Review a diff with a fresh reviewer and return a Markdown report.
execution: async            # sync | async
environment: shell          # shell | python | docker | wasm
entrypoint: run.sh          # relative path inside the recipe, must exist
inputs:                     # typed, caller-owned arguments
  diff_path: {type: path, required: true, description: The diff to review.}
  depth: {type: integer, default: 1}
result: Markdown report on stdout.
effects: {filesystem: read, network: false}   # filesystem: none|read|write
timeout: 600                # seconds
"""

BASE = {
    "name": "tool",
    "description": "Does a thing.",
    "execution": "sync",
    "environment": "python",
    "entrypoint": "main.py",
}


def recipe(**changes: object) -> bytes:
    document = {**BASE, **changes}
    return yaml.safe_dump({k: v for k, v in document.items() if v is not DROP}).encode()


DROP = object()


def problems_of(data: bytes, file_paths: frozenset[str] | None = None) -> tuple[str, ...]:
    with pytest.raises(ValidationError) as info:
        parse_recipe(data, "recipes/x/recipe.yaml", file_paths)
    return info.value.problems


def test_spec_example_parses() -> None:
    manifest = parse_recipe(SPEC_EXAMPLE, "recipe.yaml", frozenset({"run.sh", "recipe.yaml"}))
    assert manifest.name == "review-change"
    assert manifest.execution == "async"
    assert manifest.environment == "shell"
    assert manifest.entrypoint == "run.sh"
    assert manifest.inputs == (
        RecipeInput("diff_path", "path", required=True, description="The diff to review."),
        RecipeInput("depth", "integer", default=1),
    )
    assert manifest.result == "Markdown report on stdout."
    assert manifest.effects == RecipeEffects(filesystem="read", network=False)
    assert manifest.timeout == 600


def test_minimal_recipe_and_crlf_bom() -> None:
    data = recipe()
    manifest = parse_recipe(data, "recipe.yaml")
    assert (manifest.inputs, manifest.effects, manifest.timeout) == ((), None, None)
    crlf = b"\xef\xbb\xbf" + data.replace(b"\n", b"\r\n")
    assert parse_recipe(crlf, "recipe.yaml") == manifest


def test_unknown_top_level_key_is_named() -> None:
    problems = problems_of(recipe(tools=["x"]))
    assert len(problems) == 1
    assert problems[0].startswith("tools: unknown key")


@pytest.mark.parametrize("key", ["name", "description", "execution", "environment", "entrypoint"])
def test_required_keys(key: str) -> None:
    assert f"{key}: is required" in problems_of(recipe(**{key: DROP}))


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"name": "Bad Name"}, "name: 'Bad Name' may only hold a-z, 0-9 and '-'"),
        ({"name": 5}, "name: must be a string, got integer"),
        ({"description": " "}, "description: must not be blank"),
        ({"description": "d" * 1025}, "description: must be 1-1024 characters, got 1025"),
        ({"execution": "later"}, "execution: must be one of sync, async, got 'later'"),
        ({"environment": "java"}, "environment: must be one of shell, python, docker, wasm"),
        ({"environment": True}, "environment: must be one of shell, python, docker, wasm, got"),
        ({"entrypoint": "/bin/sh"}, "entrypoint: '/bin/sh' must be a relative path"),
        ({"entrypoint": "../run.sh"}, "entrypoint: '../run.sh' must stay inside the recipe"),
        ({"entrypoint": "a//b"}, "entrypoint: 'a//b' must stay inside the recipe"),
        ({"entrypoint": "a\\b"}, "entrypoint: 'a\\\\b' must be a relative path"),
        ({"entrypoint": 3}, "entrypoint: must be a string, got integer"),
        ({"result": ["x"]}, "result: must be a string, got list"),
        ({"timeout": True}, "timeout: must be a whole number of seconds, got boolean"),
        ({"timeout": 1.5}, "timeout: must be a whole number of seconds, got number"),
        ({"timeout": "60"}, "timeout: must be a whole number of seconds, got string"),
        ({"timeout": 0}, "timeout: must be a positive number of seconds, got 0"),
        ({"timeout": -5}, "timeout: must be a positive number of seconds, got -5"),
        ({"effects": "none"}, "effects: must be a mapping"),
        (
            {"effects": {"filesystem": "all"}},
            "effects.filesystem: must be one of none, read, write",
        ),
        ({"effects": {"network": "no"}}, "effects.network: must be true or false, got string"),
        ({"effects": {"disk": 1}}, "effects.disk: unknown key"),
        ({"inputs": ["a"]}, "inputs: must be a mapping"),
        ({"inputs": {"Depth": {"type": "integer"}}}, "inputs: name 'Depth' must match"),
        ({"inputs": {"my-arg": {"type": "string"}}}, "inputs: name 'my-arg' must match"),
        ({"inputs": {"a": "string"}}, "inputs.a: must be a mapping like {type: string}"),
        ({"inputs": {"a": {}}}, "inputs.a.type: is required"),
        ({"inputs": {"a": {"type": "float"}}}, "inputs.a.type: must be one of string, integer"),
        ({"inputs": {"a": {"type": "path", "help": "x"}}}, "inputs.a.help: unknown key"),
        ({"inputs": {"a": {"type": "path", "required": "yes"}}}, "inputs.a.required: must be"),
        ({"inputs": {"a": {"type": "path", "description": 1}}}, "inputs.a.description: must be"),
        ({"inputs": {"a": {"type": "integer", "default": "1"}}}, "inputs.a.default: must be an"),
        ({"inputs": {"a": {"type": "integer", "default": True}}}, "inputs.a.default: must be an"),
        ({"inputs": {"a": {"type": "number", "default": "x"}}}, "inputs.a.default: must be a"),
        ({"inputs": {"a": {"type": "number", "default": math.inf}}}, "inputs.a.default: must be"),
        ({"inputs": {"a": {"type": "boolean", "default": 1}}}, "inputs.a.default: must be true"),
        ({"inputs": {"a": {"type": "string", "default": 1}}}, "inputs.a.default: must be a str"),
        (
            {"inputs": {"a": {"type": "string", "required": True, "default": "x"}}},
            "inputs.a.default: a required input cannot have a default",
        ),
    ],
)
def test_field_problems(changes: dict[str, object], expected: str) -> None:
    problems = problems_of(recipe(**changes))
    assert any(problem.startswith(expected) for problem in problems), problems


def test_good_defaults_of_every_type() -> None:
    inputs = {
        "s": {"type": "string", "default": "x"},
        "i": {"type": "integer", "default": 3},
        "n": {"type": "number", "default": 2},
        "f": {"type": "number", "default": 2.5},
        "b": {"type": "boolean", "default": False},
        "p": {"type": "path", "default": "a/b"},
        "_x1": {"type": "string", "required": False, "description": "ok"},
    }
    manifest = parse_recipe(recipe(inputs=inputs), "recipe.yaml")
    defaults = {i.name: i.default for i in manifest.inputs}
    assert defaults == {"s": "x", "i": 3, "n": 2, "f": 2.5, "b": False, "p": "a/b", "_x1": None}
    assert input_env_name("_x1") == "LIBRARIAN_INPUT__X1"


def test_entrypoint_must_exist_when_files_are_known() -> None:
    problems = problems_of(recipe(entrypoint="run.sh"), frozenset({"recipe.yaml", "main.py"}))
    assert problems == ("entrypoint: run.sh does not exist in the recipe",)
    nested = recipe(entrypoint="bin/run.sh")
    assert parse_recipe(nested, "r", frozenset({"bin/run.sh"})).entrypoint == "bin/run.sh"


def test_all_problems_collected_in_one_line_message() -> None:
    data = recipe(execution="x", environment="y", timeout=0, extra=1)
    with pytest.raises(ValidationError) as info:
        parse_recipe(data, "recipes/x/recipe.yaml")
    assert len(info.value.problems) == 4
    assert info.value.message == (
        "recipes/x/recipe.yaml: invalid recipe.yaml: " + "; ".join(info.value.problems)
    )


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"- a\n", "recipe.yaml: must be a mapping, got list"),
        (b"", "recipe.yaml: must be a mapping, got null"),
        (b"name: [\n", "recipe.yaml is not valid YAML"),
        (b"name: \xff\n", "recipe.yaml is not valid UTF-8"),
        (b"timeout: 2024-02-31\n", "recipe.yaml is not valid YAML"),
    ],
)
def test_structural_problems(data: bytes, expected: str) -> None:
    assert problems_of(data)[0].startswith(expected)


# --- coerce_input --------------------------------------------------------------------------


def spec(kind: str) -> RecipeInput:
    return RecipeInput("arg", kind)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kind", "raw", "value"),
    [
        ("integer", "42", 42),
        ("integer", "-7", -7),
        ("number", "2.5", 2.5),
        ("number", "3", 3.0),
        ("boolean", "true", True),
        ("boolean", "YES", True),
        ("boolean", "1", True),
        ("boolean", "False", False),
        ("boolean", "no", False),
        ("boolean", "0", False),
        ("string", " spaced ", " spaced "),
        ("path", "../x", "../x"),
    ],
)
def test_coerce_input(kind: str, raw: str, value: object) -> None:
    result = coerce_input(spec(kind), raw)
    assert result == value
    assert type(result) is type(value)


@pytest.mark.parametrize(
    ("kind", "raw"),
    [
        ("integer", "1.5"),
        ("integer", "x"),
        ("number", "abc"),
        ("number", "nan"),
        ("boolean", "maybe"),
        ("boolean", ""),
    ],
)
def test_coerce_input_refuses(kind: str, raw: str) -> None:
    with pytest.raises(UsageError, match="input arg: expected"):
        coerce_input(spec(kind), raw)


# --- properties ----------------------------------------------------------------------------


@FAST
@given(st.integers(min_value=-(10**6), max_value=10**9))
def test_timeout_property(value: int) -> None:
    if value > 0:
        assert parse_recipe(recipe(timeout=value), "r").timeout == value
    else:
        expected = f"timeout: must be a positive number of seconds, got {value}"
        assert problems_of(recipe(timeout=value)) == (expected,)


@FAST
@given(
    st.dictionaries(
        st.from_regex(r"[a-z_][a-z0-9_]{0,10}", fullmatch=True),
        st.sampled_from(["string", "integer", "number", "boolean", "path"]),
        max_size=5,
    )
)
def test_inputs_round_trip(inputs: dict[str, str]) -> None:
    data = recipe(inputs={name: {"type": kind} for name, kind in inputs.items()})
    manifest = parse_recipe(data, "r")
    assert {i.name: i.type for i in manifest.inputs} == inputs


@FAST
@given(st.integers(), st.booleans())
def test_coerce_round_trips(number: int, flag: bool) -> None:
    assert coerce_input(spec("integer"), str(number)) == number
    assert coerce_input(spec("boolean"), str(flag).lower()) is flag


@settings(max_examples=150, deadline=None, database=None)
@given(st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
def test_arbitrary_bytes_raise_only_librarian_errors(data: bytes) -> None:
    try:
        parse_recipe(data, "r", frozenset())
    except LibrarianError:
        pass
