"""The conflict markers ``update --merge-conflicts`` writes into the work tree, as ``git
merge`` writes them, labelled by side; and whether a file holds them (a file holding
them is never admitted: ``content.validate``)."""

from __future__ import annotations

MARKER_OURS, MARKER_SPLIT, MARKER_THEIRS = b"<<<<<<< local", b"=======", b">>>>>>> upstream"

MARKERS_PROBLEM = ("holds conflict markers (<<<<<<< local … >>>>>>> upstream) from `update "
                   "--merge-conflicts`; keep what you want, delete the marker lines, then "
                   "`librarian resolve NAME`")


def has_markers(data: bytes) -> bool:
    """Whether ``data`` holds the three marker lines, in order, each at a line start."""
    start = data.find(MARKER_OURS)
    while start > 0 and data[start - 1:start] != b"\n":
        start = data.find(MARKER_OURS, start + 1)
    if start < 0:
        return False
    split = data.find(b"\n" + MARKER_SPLIT + b"\n", start)
    return split >= 0 and data.find(b"\n" + MARKER_THEIRS, split) >= 0
