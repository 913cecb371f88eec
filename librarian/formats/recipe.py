"""recipe.yaml: the manifest of a capability (spec §2.6), and typing of caller inputs.

Unknown keys are errors (unlike SKILL.md, this format is ours), and every problem names
its field, e.g. ``inputs.depth.default: must be an integer, got string``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any, cast, get_args

from librarian.core.manifests import InputType, RecipeEffects, RecipeInput, RecipeManifest
from librarian.core.names import name_problem
from librarian.errors import UsageError
from librarian.formats.skillmd import (
    MAX_DESCRIPTION,
    decode_text,
    load_yaml_collecting,
    type_name,
    validation_error,
)

RECIPE_FILE = "recipe.yaml"
REQUIRED_KEYS = ("name", "description", "execution", "environment", "entrypoint")
OPTIONAL_KEYS = ("inputs", "result", "effects", "timeout")
EXECUTIONS = ("sync", "async")
ENVIRONMENTS = ("shell", "python", "docker", "wasm")
INPUT_TYPES: tuple[str, ...] = get_args(InputType)
INPUT_KEYS = ("type", "required", "default", "description")
FILESYSTEM_EFFECTS = ("none", "read", "write")
EFFECT_KEYS = ("filesystem", "network")
# Input names become environment variables LIBRARIAN_INPUT_<NAME>.
INPUT_NAME_RE = re.compile(r"[a-z_][a-z0-9_]*")

_TRUE = frozenset({"true", "1", "yes"})
_FALSE = frozenset({"false", "0", "no"})


def input_env_name(name: str) -> str:
    """The environment variable a recipe input is passed in."""
    return "LIBRARIAN_INPUT_" + name.upper()


def parse_recipe(
    data: bytes, where: str, file_paths: frozenset[str] | None = None
) -> RecipeManifest:
    """Parse and validate recipe.yaml; ``file_paths`` (when given) must hold the entrypoint."""
    problems: list[str] = []
    manifest = _parse(data, file_paths, problems)
    if manifest is None or problems:
        raise validation_error(where, f"invalid {RECIPE_FILE}", problems)
    return manifest


def coerce_input(spec: RecipeInput, raw: str) -> object:
    """Convert a command-line value to the input's declared type, or raise UsageError."""
    if spec.type == "integer":
        try:
            return int(raw.strip())
        except ValueError:
            raise _coerce_error(spec, raw, "an integer") from None
    if spec.type == "number":
        try:
            number = float(raw.strip())
        except ValueError:
            raise _coerce_error(spec, raw, "a number") from None
        # Inputs travel as JSON on stdin, which has no NaN or infinity.
        if not math.isfinite(number):
            raise _coerce_error(spec, raw, "a finite number")
        return number
    if spec.type == "boolean":
        word = raw.strip().lower()
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
        raise _coerce_error(spec, raw, "a boolean (true/false, yes/no, 1/0)")
    return raw


def _coerce_error(spec: RecipeInput, raw: str, expected: str) -> UsageError:
    return UsageError(
        f"input {spec.name}: expected {expected}, got {raw!r}",
        hint=f"pass it as --arg {spec.name}=VALUE where VALUE is {expected}",
    )


def _parse(
    data: bytes, file_paths: frozenset[str] | None, problems: list[str]
) -> RecipeManifest | None:
    text = decode_text(data, RECIPE_FILE, problems)
    if text is None:
        return None
    doc = load_yaml_collecting(text, RECIPE_FILE, problems)
    if problems:
        return None
    if not isinstance(doc, Mapping):
        problems.append(f"{RECIPE_FILE}: must be a mapping, got {type_name(doc)}")
        return None

    allowed = REQUIRED_KEYS + OPTIONAL_KEYS
    for key in doc:
        if not isinstance(key, str):
            problems.append(f"{RECIPE_FILE}: key {key!r} is not a string")
        elif key not in allowed:
            problems.append(f"{key}: unknown key (allowed: {', '.join(allowed)})")
    for key in REQUIRED_KEYS:
        if doc.get(key) is None:
            problems.append(f"{key}: is required")

    name = _string(doc, "name", problems)
    if name is not None:
        problem = name_problem(name)
        if problem is not None:
            problems.append(f"name: {name!r} {problem}")
    description = _string(doc, "description", problems)
    if description is not None:
        if not description.strip():
            problems.append("description: must not be blank")
        elif len(description) > MAX_DESCRIPTION:
            problems.append(
                f"description: must be 1-{MAX_DESCRIPTION} characters, got {len(description)}"
            )
    execution = _choice(doc.get("execution"), "execution", EXECUTIONS, problems)
    environment = _choice(doc.get("environment"), "environment", ENVIRONMENTS, problems)
    entrypoint = _string(doc, "entrypoint", problems)
    if entrypoint is not None:
        _check_entrypoint(entrypoint, file_paths, problems)
    inputs = _inputs(doc.get("inputs"), problems)
    result = _string(doc, "result", problems)
    effects = _effects(doc.get("effects"), problems)
    timeout = _timeout(doc.get("timeout"), problems)

    if (
        problems
        or name is None
        or description is None
        or execution is None
        or environment is None
        or entrypoint is None
    ):
        return None
    return RecipeManifest(
        name=name,
        description=description,
        execution=cast(Any, execution),
        environment=cast(Any, environment),
        entrypoint=entrypoint,
        inputs=inputs,
        result=result,
        effects=effects,
        timeout=timeout,
    )


def _string(doc: Mapping[Any, Any], key: str, problems: list[str]) -> str | None:
    value = doc.get(key)
    if value is None or isinstance(value, str):
        return value
    problems.append(f"{key}: must be a string, got {type_name(value)}")
    return None


def _choice(value: object, field: str, choices: tuple[str, ...], problems: list[str]) -> str | None:
    if value is None:
        return None
    if isinstance(value, str) and value in choices:
        return value
    shown = repr(value) if isinstance(value, str) else type_name(value)
    problems.append(f"{field}: must be one of {', '.join(choices)}, got {shown}")
    return None


def _check_entrypoint(path: str, file_paths: frozenset[str] | None, problems: list[str]) -> None:
    parts = path.split("/")
    if path.startswith("/") or "\\" in path or "\x00" in path:
        problems.append(f"entrypoint: {path!r} must be a relative path using '/' (like run.sh)")
    elif any(part in ("", ".", "..") for part in parts):
        problems.append(f"entrypoint: {path!r} must stay inside the recipe (no '..', '.' or '//')")
    elif file_paths is not None and path not in file_paths:
        problems.append(f"entrypoint: {path} does not exist in the recipe")


def _inputs(value: object, problems: list[str]) -> tuple[RecipeInput, ...]:
    if value is None:
        return ()
    if not isinstance(value, Mapping):
        problems.append(f"inputs: must be a mapping of input name to spec, got {type_name(value)}")
        return ()
    inputs: list[RecipeInput] = []
    for name, spec in value.items():
        if not isinstance(name, str) or not INPUT_NAME_RE.fullmatch(name):
            problems.append(
                f"inputs: name {name!r} must match [a-z_][a-z0-9_]* "
                "(it becomes LIBRARIAN_INPUT_<NAME>)"
            )
            continue
        parsed = _input(name, spec, problems)
        if parsed is not None:
            inputs.append(parsed)
    return tuple(inputs)


def _input(name: str, spec: object, problems: list[str]) -> RecipeInput | None:
    field = f"inputs.{name}"
    if not isinstance(spec, Mapping):
        problems.append(f"{field}: must be a mapping like {{type: string}}, got {type_name(spec)}")
        return None
    before = len(problems)
    for key in spec:
        if key not in INPUT_KEYS:
            problems.append(f"{field}.{key}: unknown key (allowed: {', '.join(INPUT_KEYS)})")
    kind = spec.get("type")
    if kind is None:
        problems.append(f"{field}.type: is required (one of {', '.join(INPUT_TYPES)})")
    else:
        kind = _choice(kind, f"{field}.type", INPUT_TYPES, problems)
    required = spec.get("required")
    if required is None:
        required = False
    elif not isinstance(required, bool):
        problems.append(f"{field}.required: must be true or false, got {type_name(required)}")
    description = spec.get("description")
    if description is not None and not isinstance(description, str):
        problems.append(f"{field}.description: must be a string, got {type_name(description)}")
    default = spec.get("default")
    if default is not None:
        if required is True:
            problems.append(f"{field}.default: a required input cannot have a default")
        if kind is not None:
            expected = _default_problem(kind, default)
            if expected is not None:
                problems.append(f"{field}.default: must be {expected}, got {type_name(default)}")
    if len(problems) > before or kind is None:
        return None
    return RecipeInput(
        name=name,
        type=cast(InputType, kind),
        required=bool(required),
        default=default,
        description=cast("str | None", description),
    )


def _default_problem(kind: str, value: object) -> str | None:
    """What a default of input type ``kind`` must be, or None when ``value`` fits."""
    if kind == "integer":
        ok = isinstance(value, int) and not isinstance(value, bool)
        return None if ok else "an integer"
    if kind == "number":
        if isinstance(value, float) and not math.isfinite(value):
            return "a finite number"
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return None if ok else "a number"
    if kind == "boolean":
        return None if isinstance(value, bool) else "true or false"
    return None if isinstance(value, str) else "a string"


def _effects(value: object, problems: list[str]) -> RecipeEffects | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        problems.append(
            f"effects: must be a mapping like {{filesystem: read, network: false}}, "
            f"got {type_name(value)}"
        )
        return None
    for key in value:
        if key not in EFFECT_KEYS:
            problems.append(f"effects.{key}: unknown key (allowed: {', '.join(EFFECT_KEYS)})")
    filesystem = _choice(
        value.get("filesystem"), "effects.filesystem", FILESYSTEM_EFFECTS, problems
    )
    network = value.get("network")
    if network is not None and not isinstance(network, bool):
        problems.append(f"effects.network: must be true or false, got {type_name(network)}")
        network = None
    return RecipeEffects(filesystem=cast(Any, filesystem), network=network)


def _timeout(value: object, problems: list[str]) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        problems.append(f"timeout: must be a whole number of seconds, got {type_name(value)}")
        return None
    if value <= 0:
        problems.append(f"timeout: must be a positive number of seconds, got {value}")
        return None
    return value
