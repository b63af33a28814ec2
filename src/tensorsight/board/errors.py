"""Errors the board may show to a client, and the one handler that renders them.

A :class:`PublicError` carries text that is safe to send (it names request parameters,
never file-system paths or tracebacks). The handler renders
``{"error": {"code": "<code>", "message": "<one sentence>"}}`` with the error's HTTP status;
anything else becomes a logged 500 with a generic message.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

__all__ = [
    "DeadlineExceeded",
    "InvalidArgument",
    "NotFound",
    "PublicError",
    "error_response",
    "handle_error",
]

log = logging.getLogger("tensorsight.board")


class PublicError(Exception):
    """An error whose message is safe to show to the client."""

    http_status = 500
    code = "internal"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidArgument(PublicError):
    """A query parameter is missing or malformed (HTTP 400)."""

    http_status = 400
    code = "invalid_argument"


class NotFound(PublicError):
    """The run, tag, view or file does not exist (HTTP 404)."""

    http_status = 404
    code = "not_found"


class DeadlineExceeded(PublicError):
    """A request's work ran past the board's deadline (HTTP 503); the client may narrow it."""

    http_status = 503
    code = "deadline_exceeded"


def error_response(status: int, code: str, message: str) -> Response:
    """The JSON error body every failing API route returns."""
    from starlette.responses import JSONResponse

    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


async def handle_error(request: Request, exc: Exception) -> Response:
    """Starlette exception handler: PublicError -> its status, anything else -> 500."""
    if isinstance(exc, PublicError):
        return error_response(exc.http_status, exc.code, exc.message)
    log.exception("unhandled error serving %s", request.url.path, exc_info=exc)
    return error_response(500, "internal", "Internal error; see the server log.")
