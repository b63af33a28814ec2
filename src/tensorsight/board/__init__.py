"""The training board: an ASGI app over a :class:`~tensorsight.data.DataProvider`.

``create_app(provider)`` builds the Starlette application; ``serve`` runs it under uvicorn;
``tensorsight board --logdir DIR`` does both for a logdir. Starlette is imported only when
an app is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tensorsight.board.app import create_app
    from tensorsight.board.server import serve

__all__ = ["create_app", "serve"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from tensorsight.board.app import create_app

        return create_app
    if name == "serve":
        from tensorsight.board.server import serve

        return serve
    msg = f"module 'tensorsight.board' has no attribute {name!r}"
    raise AttributeError(msg)
