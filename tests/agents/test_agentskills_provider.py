"""The committed library as an agentskills-core ``SkillProvider``, held to
agentskills-testing's ``ProviderConformanceSuite`` and ``ContentLimitConformanceSuite``.
Those packages need Python 3.12: the test skips where they are not installed (an
optional job: docs/agents.md says how to run it)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

if sys.version_info < (3, 12):
    pytest.skip("agentskills-core needs Python 3.12", allow_module_level=True)
pytest.importorskip("agentskills_core", reason="agentskills-core is not installed")
pytest.importorskip("agentskills_testing", reason="agentskills-testing is not installed")
pytest.importorskip("pytest_asyncio", reason="pytest-asyncio is not installed")

from agentskills_testing.conformance import (  # noqa: E402
    ASSET_BYTES,
    ASSET_NAME,
    REFERENCE_BYTES,
    REFERENCE_NAME,
    SCRIPT_BYTES,
    SCRIPT_NAME,
    SKILL_ID,
    ContentLimitConformanceSuite,
    ProviderConformanceSuite,
)
from support.helpers import make_skill  # noqa: E402

from librarian.agents.claude_manifests import GENERATED
from librarian.agents.provider import LibrarySkillProvider  # noqa: E402
from librarian.library.layout import Library  # noqa: E402
from librarian.ops.create import init_library  # noqa: E402
from librarian.ops.retention import retain  # noqa: E402


@pytest.fixture
def contract_library(tmp_path: Path) -> Iterator[Library]:
    """A library holding exactly the contract's skill, retained as any skill is."""
    root = tmp_path / "lib"
    init_library(root, "conformance", GENERATED)
    source = make_skill(tmp_path / "src", SKILL_ID, "# Conformance\n\nFollow the steps.\n",
                        {f"references/{REFERENCE_NAME}": REFERENCE_BYTES,
                         f"scripts/{SCRIPT_NAME}": (SCRIPT_BYTES, 0o755),
                         f"assets/{ASSET_NAME}": ASSET_BYTES},
                        description="The skill the conformance suite reads.")
    library = Library(root, GENERATED)
    retain(library, source)
    yield library


class TestLibrarySkillProvider(ProviderConformanceSuite):
    @pytest.fixture
    def provider(self, contract_library: Library) -> LibrarySkillProvider:
        return LibrarySkillProvider(contract_library)


class TestLibrarySkillProviderLimits(ContentLimitConformanceSuite):
    @pytest.fixture
    def limited_provider(self, contract_library: Library) -> LibrarySkillProvider:
        return LibrarySkillProvider(contract_library, max_bytes=8)
