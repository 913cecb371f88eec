"""The reading commands over a stack of layers, one function each: ``cat``, ``check`` and
``inspect NAME``. ``prompt`` is ``union.union_registry``; ``run`` starts in the layer
``union.holder`` names, through that layer's own gate and approvals."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from librarian.layers.stack import Stack
from librarian.layers.union import Holding, holder, holdings, shadowed
from librarian.ops.checking import CheckReport, check_library
from librarian.ops.inventory import Body, cat_item
from librarian.ops.itemreport import ItemReport, inspect_item


@dataclass(frozen=True, slots=True)
class LayeredItem:
    """``inspect NAME`` over layers: the report of the layer whose item wins the name, and
    what every layer holds of that name (nearest first; empty for one library)."""

    layer: str
    report: ItemReport
    layers: tuple[Holding, ...]


def cat_layered(stack: Stack, name: str) -> Body:
    """``cat NAME``: the body of the nearest layer's item of that name."""
    return cat_item(holder(stack, name).library, name)


def inspect_layered(stack: Stack, name: str) -> LayeredItem:
    layer = holder(stack, name)
    report = inspect_item(layer.library, name)
    held = tuple(holdings(stack, name)) if stack.layered else ()
    return LayeredItem(str(layer.library.root), report, held)


def check_layered(stack: Stack, *, staged: bool = False,
                  index_file: Path | None = None) -> CheckReport:
    """``check`` of the nearest layer, with a warning per name it (or any nearer layer)
    shadows in a farther one: shadowing is the point of layers, never a failure."""
    report = check_library(stack.nearest, staged=staged, index_file=index_file)
    lines = [f"shadowed: {line}" for line in shadowed(stack)]
    return dataclasses.replace(report, warnings=(*report.warnings, *lines),
                               shown_warnings=(*report.shown_warnings, *lines)) if lines \
        else report
