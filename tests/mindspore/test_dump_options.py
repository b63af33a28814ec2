"""``tensorsight.mindspore.dump``'s options are checked before MindSpore is imported, so
these run without it."""

from __future__ import annotations

import pytest

from tensorsight.errors import UsageError
from tensorsight.mindspore import dump


@pytest.mark.parametrize("steps", [5, [0, "1"], "0", [True], [0, None]])
def test_steps_that_are_not_iterations_are_a_usage_error(tmp_path, steps):
    """A single int, a string or a list mixing types is one UsageError, not a TypeError
    from sorting or iterating them."""
    with (
        pytest.raises(UsageError, match="steps must be iterations >= 0"),
        dump(tmp_path / "x", steps=steps),
    ):
        pass
