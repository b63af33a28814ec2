"""``tensorsight board``: serve the training board for a logdir (imports nothing heavy here)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["register", "run"]

EPILOG = """\
examples:
  tensorsight board --logdir runs/
  tensorsight board --logdir runs/ --port 6007 --reload-interval 2
  tensorsight board --logdir runs/ --host 0.0.0.0      # other machines; prints a ?token= URL
  tensorsight board --logdir runs/ --allowed-host board.example.org   # behind a proxy
"""


def register(subparsers: Any) -> None:
    """Add the ``board`` subcommand."""
    parser = subparsers.add_parser(
        "board",
        help="serve the training board (scalars, histograms, images, text) for a logdir",
        description=(
            "Serve the training board for the event files under --logdir. Every point is "
            "kept; charts are downsampled per request for the visible range."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--logdir", required=True, help="folder scanned recursively for runs")
    parser.add_argument("--host", default=None, help="interface to bind (default 127.0.0.1)")
    parser.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help=(
            "also answer requests for this Host name (repeatable); on 127.0.0.1 the board "
            "answers only loopback names, which blocks DNS rebinding"
        ),
    )
    parser.add_argument(
        "--no-auth",
        action="store_true",
        help="with a non-loopback --host, serve without a token (anyone who can reach it reads it)",
    )
    parser.add_argument(
        "--port", type=int, default=None, help="TCP port (default 6006; 0: a free one)"
    )
    parser.add_argument(
        "--reload-interval",
        type=float,
        default=None,
        metavar="SECONDS",
        help="seconds between logdir reloads; 0 disables (default 5)",
    )
    parser.add_argument(
        "--max-points-per-scalar",
        type=int,
        default=None,
        metavar="N",
        help="keep only the newest N points per scalar tag (default: keep all)",
    )
    parser.add_argument(
        "--max-tags-per-run", type=int, default=None, metavar="N", help="default 10000"
    )
    parser.add_argument("--quiet", action="store_true", help="print nothing but errors")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Load the logdir, print the URL and serve until interrupted."""
    from pathlib import Path

    from tensorsight.board.app import require_front_end
    from tensorsight.board.server import DEFAULT_HOST, DEFAULT_PORT, serve
    from tensorsight.data import Limits, LogdirProvider
    from tensorsight.errors import InputFileError, UsageError

    require_front_end()  # before anything is read: no point serving a board without it
    remote = LogdirProvider.is_remote(args.logdir)
    logdir: str | Path = args.logdir if remote else Path(args.logdir)  # a URL stays a URL
    if not remote and not Path(logdir).is_dir():  # a URL is checked when it is listed
        msg = (
            f"Logdir {str(logdir)!r}: not a folder. Expected a folder holding event files; "
            "check the path."
        )
        raise InputFileError(msg)
    for flag in ("max_points_per_scalar", "max_tags_per_run"):
        value = getattr(args, flag)
        if value is not None and value < 1:
            msg = f"Option --{flag.replace('_', '-')}: expected at least 1, got {value}."
            raise UsageError(msg)
    if args.reload_interval is not None and args.reload_interval < 0:
        msg = f"Option --reload-interval: expected seconds >= 0, got {args.reload_interval}."
        raise UsageError(msg)
    host = args.host or DEFAULT_HOST
    port = _listen_port(host, DEFAULT_PORT if args.port is None else args.port)
    token = _token_for(host, no_auth=args.no_auth)
    defaults = Limits()
    limits = Limits(
        max_points_per_scalar=args.max_points_per_scalar,
        max_tags_per_run=args.max_tags_per_run or defaults.max_tags_per_run,
    )
    # the runs are listed at once and their records read in the background, so the page
    # and its run list load while the logdir is read (a sweep of 1,000 runs takes seconds)
    provider = LogdirProvider(logdir, limits, read=False)
    if not args.quiet:
        runs = provider.list_runs()
        print(f"tensorsight board: {len(runs)} runs in {logdir} (reading them)", file=sys.stderr)
    if not args.quiet or token is not None:  # the token is printed once, even with --quiet
        shown = f"[{host}]" if ":" in host else host  # an IPv6 address
        query = "" if token is None else f"?token={token}"
        print(f"open http://{shown}:{port}/{query}  (Ctrl+C to stop)", file=sys.stderr)
    serve(
        provider,
        host=host,
        port=port,
        reload_interval_secs=args.reload_interval,
        log_level="error" if args.quiet else "warning",
        allowed_hosts=args.allowed_host,
        token=token,
        on_ready=provider.start_reading,
    )
    return 0


def _token_for(host: str, *, no_auth: bool) -> str | None:
    """A fresh token for a non-loopback bind (``None``: loopback, or ``--no-auth``).

    The warning goes to stderr even with ``--quiet``: serving a network is worth a line.
    """
    import secrets

    from tensorsight.board.server import is_loopback

    if is_loopback(host):
        return None
    if no_auth:
        print(
            f"warning: --host {host} --no-auth: anyone who can reach this machine can read "
            "the logdir through the board.",
            file=sys.stderr,
        )
        return None
    print(
        f"warning: --host {host} serves the board to the network; it answers only requests "
        "carrying the token in the URL below (--no-auth turns that off).",
        file=sys.stderr,
    )
    return secrets.token_urlsafe(24)


def _listen_port(host: str, port: int) -> int:
    """``port`` once checked that ``host`` can listen on it (0: a free port, picked now).

    Checked before the logdir is read, so a busy port or a bad address is a one-line error
    at once, and the URL printed names the real port.
    """
    import socket

    from tensorsight.errors import UsageError

    if not 0 <= port <= 65535:
        msg = f"Option --port: expected 0-65535, got {port}."
        raise UsageError(msg)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        family, _, _, _, address = infos[0]
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does
            sock.bind(address)
            return int(sock.getsockname()[1])
    except OSError as exc:
        msg = (
            f"Address {host}:{port}: cannot listen ({exc.strerror or exc}). Pass another "
            "--port (0 picks a free one) or a --host of this machine."
        )
        raise UsageError(msg) from None
