"""Package build hook: every sdist and wheel ships the board's built front end.

The front end (``web/``, TypeScript + Vite) builds into ``src/tensorsight/board/static``,
which git ignores. Before hatchling collects the files of an sdist or a wheel, this hook
builds it when it is missing or older than any file under ``web/`` (``npm ci`` first when
``web/node_modules`` is missing or older than the lock file), the same rule as ``make web``.
Without node and npm, an existing build is used as it is; with neither, the build fails
with one message that says what to install. The sdist carries both the ``web/`` sources and
the built files, so a wheel built from it needs no node.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any, NoReturn

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

STATIC = Path("src", "tensorsight", "board", "static")
WEB_INPUTS = ("src", "index.html", "vite.config.ts", "tsconfig.json", "package.json")


def _newest(paths: list[Path]) -> float:
    return max((p.stat().st_mtime for p in paths if p.is_file()), default=0.0)


def _sources(web: Path) -> list[Path]:
    found: list[Path] = []
    for name in WEB_INPUTS:
        path = web / name
        found += [p for p in path.rglob("*") if p.is_file()] if path.is_dir() else [path]
    return found


class FrontEndBuildHook(BuildHookInterface[Any]):
    """Build ``web/`` into ``board/static`` before an sdist or a wheel is assembled."""

    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if version == "editable":  # a checkout serves src/: `make web` builds it there
            return
        root = Path(self.root)
        web, index = root / "web", root / STATIC / "index.html"
        if not (web / "package.json").is_file():  # a tree without the sources
            if index.is_file():
                return
            self._fail(f"{STATIC}/index.html is missing and there is no web/ to build it from")
        stale = not index.is_file() or index.stat().st_mtime < _newest(_sources(web))
        if not stale:
            return
        npm, npx = shutil.which("npm"), shutil.which("npx")
        if npm is None or npx is None:
            if index.is_file():
                self.app.display_warning(
                    "tensorsight: node/npm not found; packaging the existing board front end "
                    f"in {STATIC}, which is older than web/"
                )
                return
            self._fail("node and npm are not installed, so the front end cannot be built")
        deps = web / "node_modules" / ".package-lock.json"
        if not deps.is_file() or deps.stat().st_mtime < (web / "package-lock.json").stat().st_mtime:
            self.app.display_info("tensorsight: npm ci (the board's front-end tool chain)")
            self._run([npm, "ci", "--no-audit", "--no-fund"], web)
        self.app.display_info(f"tensorsight: vite build -> {STATIC}")
        self._run([npx, "vite", "build", "--logLevel", "warn"], web)
        if not index.is_file():
            self._fail(f"vite build wrote no {STATIC}/index.html")

    def _run(self, argv: list[str], cwd: Path) -> None:
        done = subprocess.run(argv, cwd=cwd, check=False)
        if done.returncode != 0:
            self._fail(f"`{' '.join(argv[1:])}` in web/ exited {done.returncode}")

    def _fail(self, why: str) -> NoReturn:
        msg = (
            f"tensorsight: cannot package the board's front end: {why}. Install node 20+ and "
            "npm and build again (or run `make web` first); a wheel without it would serve "
            "no board."
        )
        self.app.abort(msg)  # prints the message and exits, without a traceback
        raise SystemExit(1)  # abort() has exited already
