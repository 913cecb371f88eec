"""The flat YAML reader returns what both PyYAML loaders return, or None."""

from __future__ import annotations

import pytest
import yaml

from librarian.formats.yamlio import _flat_mapping, load_yaml


@pytest.mark.parametrize("length", [1024, 1025, 5000])
def test_a_flat_document_with_a_long_key_reads_as_pyyaml_reads_it(length: int) -> None:
    text = "a" * length + ": b\n"
    for loader in (yaml.SafeLoader, getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
        try:
            expected: object = yaml.load(text, Loader=loader)  # noqa: S506 - safe loaders
        except yaml.YAMLError:
            expected = None  # PyYAML refuses it: the flat reader must leave it to PyYAML
        assert _flat_mapping(text) == expected
    if length > 1024:
        with pytest.raises(Exception, match="not valid YAML"):
            load_yaml(text, "SKILL.md")
