"""A batch's fsyncs run in threads; whatever one of them raises reaches
the caller, as it did when they ran one after the other (nothing is called durable that
was not fsynced)."""

from __future__ import annotations

from pathlib import Path

import pytest

from librarian.core.fsutil import _fsync_each

pytestmark = pytest.mark.crash


def test_an_error_that_is_not_an_oserror_in_a_worker_is_raised(tmp_path: Path) -> None:
    paths = [tmp_path / f"f{n}" for n in range(5)]
    for path in paths:
        path.write_bytes(b"x")
    # os.open raises ValueError for an embedded NUL: in a thread, that was printed by
    # threading's excepthook and the batch reported durable
    with pytest.raises(ValueError, match="null"):
        _fsync_each([*paths[:2], tmp_path / "bad\0name", *paths[2:]])
    assert _fsync_each(paths)
