"""``create_app(provider, views)``: the board's ASGI application (Starlette).

Routes (documented in ``docs/http_api/``):

* ``GET /api/views`` — the tabs: name, title, enabled, reason (a view that fails to load or
  whose ``is_active`` raises is listed disabled with the reason) and ``module``, the URL of a
  third-party view's front-end ES module (``null``: bundled with the board). ``is_active``
  runs in worker threads with the work deadline; a view still checking then is listed
  enabled without data (reason "no answer within the board's deadline").
* ``GET /views/<name>/index.js`` — that module, the file the view's
  :meth:`~tensorsight.board.views.base.View.frontend` names.
* ``GET /api/runs`` — the run list with first/last write time, tags, active flag and what
  the memory limits dropped; ``generation`` grows whenever new data arrived.
* ``/api/views/<name>/...`` — each view's own routes.
* everything else — the built front end from ``static_dir`` (``board/static`` by default),
  and nothing outside it.

With ``allowed_hosts`` set, a request whose ``Host`` header names another host gets a 400
before any route runs: a page on another site cannot read the board through DNS rebinding
(its requests carry that site's name). :func:`tensorsight.board.server.serve` sets it to the
loopback names whenever the board binds a loopback address.

JSON API requests (``/api/...``) sent by a page of another origin get a 403 before any route
runs, as Jupyter does: a browser marks them with ``Sec-Fetch-Site: cross-site`` or
``same-site`` (an ``<img src=http://127.0.0.1:6006/api/...>`` on any page, a ``fetch`` from
evil.example, another port of this machine), or with an ``Origin`` that is not the board's
own. Requests that carry neither header (curl, scripts, our CLI) and the front end's own
same-origin requests are served.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tensorsight._lazy import lazy_import
from tensorsight.board.errors import NotFound, PublicError, handle_error
from tensorsight.board.views import View, ViewInfo, view_registry
from tensorsight.board.views.base import WORK_DEADLINE_SECS
from tensorsight.errors import InputFileError, RegistryError

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

    from tensorsight.data import DataProvider

__all__ = [
    "DEFAULT_STATIC_DIR",
    "LOOPBACK_HOSTS",
    "create_app",
    "frontend_url",
    "host_name",
    "require_front_end",
    "runs_impl",
]

DEFAULT_STATIC_DIR = Path(__file__).resolve().parent / "static"
ACTIVE_WINDOW_SECS = 120.0
#: How long ``GET /api/runs`` may answer the same body while no new data arrived (its
#: ``now`` and ``active`` flags age by at most this).
RUNS_BODY_TTL_SECS = 1.0
# The names a browser on this machine uses for the loopback interface.
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")

_NOT_BUILT = """<!doctype html><meta charset="utf-8"><title>tensorsight board</title>
<p>The board's front end is not built. Run <code>make web</code> in a source checkout, or
install a released wheel, which ships it.</p>"""


def require_front_end(static_dir: Path | None = None) -> Path:
    """The folder of the built front end, once checked that it holds ``index.html``.

    ``tensorsight board`` (and every command that serves the board) calls this before it
    reads anything, so a copy of tensorsight without the front end says so in one line
    instead of serving an HTTP 503 page.

    Args:
        static_dir: Folder to check (``None``: the packaged ``board/static``).

    Raises:
        InputFileError: ``index.html`` is not there.
    """
    static = DEFAULT_STATIC_DIR if static_dir is None else static_dir
    if not (static / "index.html").is_file():
        msg = (
            f"Board front end {str(static)!r}: index.html not found (this copy of tensorsight "
            "was built without it). Install a released wheel, or in a source checkout run "
            "`make web` (needs node 20+ and npm)."
        )
        raise InputFileError(msg)
    return static


_SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; img-src 'self' blob: data:; style-src 'self' 'unsafe-inline'; "
        "script-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def runs_impl(provider: DataProvider, *, now: float | None = None) -> dict[str, Any]:
    """The body of ``GET /api/runs``."""
    now = time.time() if now is None else now
    runs = []
    for info in provider.list_runs():
        last = info.last_wall_time
        runs.append(
            {
                "name": info.name,
                "first_wall_time": info.first_wall_time,
                "last_wall_time": last,
                "tag_count": info.tag_count,
                "tags": {kind: list(tags) for kind, tags in info.tags.items() if tags},
                "active": (
                    info.is_active
                    if info.is_active is not None
                    else last is not None and now - last <= ACTIVE_WINDOW_SECS
                ),
                "dropped": dict(info.dropped),
            }
        )
    return {
        "generation": provider.generation,
        "loading": provider.loading,
        "now": now,
        "limits": provider.limits.to_json(),
        "runs": runs,
    }


def frontend_url(name: str) -> str:
    """Where the board serves the front-end ES module of the third-party view ``name``."""
    return f"/views/{name}/index.js"


def _frontend_module(view: View) -> Path | None:
    """The ES module file ``view`` ships (``None``: bundled), checked that it exists."""
    module = view.frontend().es_module
    if module is None:
        return None
    path = Path(module)
    if not path.is_file():
        msg = f"front-end module {str(path)!r} of view {view.name!r} not found"
        raise InputFileError(msg)
    return path


def _load_views(
    provider: DataProvider, names: Iterable[str] | None
) -> tuple[list[View], list[ViewInfo], dict[str, Path]]:
    registry = view_registry()
    views: list[View] = []
    infos: list[ViewInfo] = []
    modules: dict[str, Path] = {}
    for name in registry.names() if names is None else names:
        try:
            cls = registry.get(name)
            view = cls(provider)
            module = _frontend_module(view)
        except (RegistryError, Exception) as exc:  # a broken view must not crash the board
            infos.append(ViewInfo(name, name.capitalize(), False, f"unavailable: {exc}"))
            continue
        views.append(view)
        url = None
        if module is not None:
            modules[view.name] = module
            url = frontend_url(view.name)
        infos.append(ViewInfo(view.name, view.title or name.capitalize(), True, module=url))
    return views, infos, modules


def create_app(
    provider: DataProvider,
    views: Iterable[str] | None = None,
    *,
    static_dir: Path | None = None,
    allowed_hosts: Sequence[str] | None = None,
    work_deadline_secs: float = WORK_DEADLINE_SECS,
    token: str | None = None,
) -> Starlette:
    """Build the board application.

    Args:
        provider: Where every view reads its data.
        views: View names to mount, in tab order (``None``: built-ins, then entry points).
        static_dir: Folder of the built front end (``None``: the packaged ``board/static``).
        allowed_hosts: Host names (without port) that requests may name in their ``Host``
            header; names ending in ``.localhost`` match ``localhost``. ``None``: any host
            (in-process clients, embedding; ``serve()`` passes the loopback names).
        work_deadline_secs: How long one request's work (run off the event loop in a worker
            thread) may take before the client gets a 503 ``deadline_exceeded``.
        token: When set, every request must carry it: ``?token=`` once (the board then
            sets an HttpOnly cookie), the cookie, or ``Authorization: token <token>``;
            otherwise 401 ``unauthorized``. ``serve()`` sets it for non-loopback binds.

    Returns:
        A Starlette application; serve it with uvicorn (see :mod:`tensorsight.board.server`).
    """
    lazy_import("starlette", extra="board", needed_by="tensorsight board")
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.responses import FileResponse, HTMLResponse, JSONResponse, Response
    from starlette.routing import Mount, Route, Router
    from starlette.staticfiles import StaticFiles

    loaded, infos, modules = _load_views(provider, views)
    static = DEFAULT_STATIC_DIR if static_dir is None else static_dir

    async def list_views(request: Request) -> Response:
        checks = await _check_views(loaded, request.app.state.work_deadline_secs)
        out = []
        for info in infos:
            enabled, reason = info.enabled, info.reason
            if info.name in checks:
                result = checks[info.name]
                if isinstance(result, BaseException):  # listed disabled with the reason
                    enabled = False
                    reason = f"unavailable: {type(result).__name__}: {result}"
                elif result is None:  # still checking: the tab works, its data may be slow
                    reason = "no answer within the board's deadline"
                else:
                    reason = "" if result else "no data yet"
            out.append(
                {
                    "name": info.name,
                    "title": info.title,
                    "enabled": enabled,
                    "has_data": enabled and not reason,
                    "reason": reason,
                    "module": info.module,
                }
            )
        return JSONResponse({"views": out})

    async def frontend_module(request: Request) -> Response:
        name = request.path_params["name"]
        path = modules.get(name)
        if path is None:
            msg = f"View {name[:200]!r} has no front-end module on this board."
            raise NotFound(msg)
        return FileResponse(
            path, media_type="text/javascript", headers={"Cache-Control": "no-cache"}
        )

    # the run list's body per (generation, loading), kept at most RUNS_BODY_TTL_SECS: the
    # page polls it every 150 ms while the logdir is read, and at 1,000 runs x 20 tags the
    # body is ~0.5 MB built on the event loop each time
    runs_body: dict[str, Any] = {"key": None, "at": 0.0, "bytes": b""}

    async def list_runs(request: Request) -> Response:
        key = (provider.generation, provider.loading)
        now = time.monotonic()
        if runs_body["key"] != key or now - runs_body["at"] > RUNS_BODY_TTL_SECS:
            body = JSONResponse(runs_impl(provider)).body
            runs_body.update(key=key, at=now, bytes=body)
        return Response(runs_body["bytes"], media_type="application/json")

    async def api_not_found(request: Request) -> Response:
        msg = "No such API route."
        raise NotFound(msg)

    async def index(request: Request) -> Response:
        page = static / "index.html"
        if not page.is_file():
            return HTMLResponse(_NOT_BUILT, status_code=503)
        return HTMLResponse(page.read_text(encoding="utf-8"))

    routes: list[Any] = [
        Route("/api/views", list_views),
        Route("/api/runs", list_runs),
    ]
    routes += [Mount(f"/api/views/{v.name}", app=Router(list(v.routes()))) for v in loaded]
    routes += [
        Route("/api/{rest:path}", api_not_found),
        Route("/views/{name}/index.js", frontend_module),
        Route("/", index),
    ]
    if static.is_dir():
        routes.append(Mount("/", app=StaticFiles(directory=static, check_dir=False)))

    app = Starlette(
        routes=routes,
        middleware=[
            Middleware(_SecurityHeaders),
            Middleware(_SameOriginApi),
            *([] if token is None else [Middleware(_TokenCheck, token=token)]),
            *([] if allowed_hosts is None else [Middleware(_HostCheck, hosts=allowed_hosts)]),
        ],
        exception_handlers={PublicError: handle_error, Exception: handle_error},
    )
    app.state.provider = provider
    app.state.work_deadline_secs = work_deadline_secs
    return app


async def _check_views(
    views: Sequence[View], deadline: float
) -> dict[str, bool | BaseException | None]:
    """Each view's ``is_active()``, in worker threads side by side, within ``deadline``.

    ``is_active`` reads data (the comparison view lists its comparisons from disk), so it
    must not run on the event loop: a slow one would stall ``/api/runs`` and every other
    route. A view that raises maps to its exception; one still working at the deadline maps
    to ``None`` (its thread is abandoned and finishes on its own).
    """
    import anyio
    import anyio.to_thread

    results: dict[str, bool | BaseException | None] = {v.name: None for v in views}

    async def check(view: View) -> None:
        try:
            active = await anyio.to_thread.run_sync(view.is_active, abandon_on_cancel=True)
        except Exception as exc:
            results[view.name] = exc
        else:
            results[view.name] = bool(active)

    with anyio.move_on_after(deadline):
        async with anyio.create_task_group() as group:
            for view in views:
                group.start_soon(check, view)
    return results


class _SecurityHeaders:
    """Pure ASGI middleware adding CSP and friends to every HTTP response."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                for key, value in _SECURITY_HEADERS.items():
                    headers.append((key.lower().encode(), value.encode()))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)


def host_name(header: str) -> str:
    """The host part of a ``Host`` header, lower-cased, without port or IPv6 brackets."""
    value = header.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


class _HostCheck:
    """Pure ASGI middleware: 400 for requests whose ``Host`` is not an allowed name."""

    def __init__(self, app: Any, hosts: Sequence[str]) -> None:
        self.app = app
        self.hosts = frozenset(host_name(h) for h in hosts)

    def is_allowed(self, name: str) -> bool:
        if name in self.hosts:
            return True
        return name.endswith(".localhost") and "localhost" in self.hosts

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        raw = dict(scope.get("headers") or ()).get(b"host", b"")
        name = host_name(raw.decode("latin-1"))
        if self.is_allowed(name):
            await self.app(scope, receive, send)
            return
        from tensorsight.board.errors import error_response

        shown = name[:80] or "(none)"
        msg = (
            f"Host {shown!r} is not served by this board. Open it as "
            "http://127.0.0.1:PORT/, or start it with --allowed-host NAME."
        )
        await error_response(400, "invalid_host", msg)(scope, receive, send)


# What Sec-Fetch-Site says for requests the board serves: its own pages, and a user typing
# the URL or opening a bookmark.
_OWN_FETCH_SITES = frozenset({"same-origin", "none"})


class _SameOriginApi:
    """Pure ASGI middleware: 403 for ``/api/`` requests a page of another origin sent."""

    def __init__(self, app: Any) -> None:
        self.app = app

    @staticmethod
    def refusal(headers: dict[bytes, bytes]) -> str:
        """Why the request is refused ("" when it is served)."""
        site = headers.get(b"sec-fetch-site", b"").decode("latin-1").strip().lower()
        if site and site not in _OWN_FETCH_SITES:
            return f"Sec-Fetch-Site is {site[:40]!r}"
        origin = headers.get(b"origin")
        if origin is None:
            return ""
        text = origin.decode("latin-1").strip().lower()
        host = headers.get(b"host", b"").decode("latin-1").strip().lower()
        scheme, sep, authority = text.partition("://")
        if not sep or scheme not in ("http", "https") or authority != host:
            return f"Origin {text[:80]!r} is not this board"
        return ""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket") or not str(scope.get("path", "")).startswith(
            "/api/"
        ):
            await self.app(scope, receive, send)
            return
        why = self.refusal(dict(scope.get("headers") or ()))
        if not why:
            await self.app(scope, receive, send)
            return
        from tensorsight.board.errors import error_response

        msg = (
            f"Cross-origin API request refused ({why}): only the board's own pages and "
            "clients without a browser origin may call the API."
        )
        await error_response(403, "cross_origin", msg)(scope, receive, send)


TOKEN_COOKIE = "tensorsight_token"


class _TokenCheck:
    """Pure ASGI middleware: 401 unless the request carries the board's token.

    The token comes from ``?token=`` (the URL printed at start-up; the response then sets
    an HttpOnly, SameSite=Strict cookie so the front end's later requests carry it), from
    that cookie, or from ``Authorization: token <token>`` / ``Bearer <token>`` (scripts).
    """

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.token = token

    def matches(self, value: str) -> bool:
        import hmac

        return hmac.compare_digest(value.encode("utf-8", "replace"), self.token.encode())

    def presented(self, scope: Any) -> tuple[bool, bool]:
        """(authorised, came from the query string)."""
        from http.cookies import CookieError, SimpleCookie
        from urllib.parse import parse_qs

        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        if any(self.matches(v) for v in query.get("token", ())):
            return True, True
        headers = dict(scope.get("headers") or ())
        auth = headers.get(b"authorization", b"").decode("latin-1").strip()
        kind, _, value = auth.partition(" ")
        if kind.lower() in ("token", "bearer") and self.matches(value.strip()):
            return True, False
        cookies: SimpleCookie = SimpleCookie()
        try:
            cookies.load(headers.get(b"cookie", b"").decode("latin-1"))
        except CookieError:
            return False, False
        morsel = cookies.get(TOKEN_COOKIE)
        return morsel is not None and self.matches(morsel.value), False

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        ok, from_query = self.presented(scope)
        if not ok:
            from tensorsight.board.errors import error_response

            msg = (
                "This board needs its token: open the URL with ?token= that `tensorsight "
                "board` printed, or send 'Authorization: token <token>'."
            )
            await error_response(401, "unauthorized", msg)(scope, receive, send)
            return
        if not from_query:
            await self.app(scope, receive, send)
            return
        cookie = f"{TOKEN_COOKIE}={self.token}; Path=/; HttpOnly; SameSite=Strict".encode()

        async def send_with_cookie(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = [*message.get("headers", []), (b"set-cookie", cookie)]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_cookie)
