"""Views that declare their front end: bundled built-ins, third-party ES modules."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from tensorsight.board import app as app_module
from tensorsight.board.app import create_app
from tensorsight.board.views import BUILTIN_VIEWS, FrontendMeta, View, view_registry
from tensorsight.data import InMemoryProvider
from tests.conftest import ROOT, on_sys_path

REGISTRY_TS = ROOT / "web" / "src" / "views" / "registry.ts"


def test_registry_ts_maps_exactly_the_builtin_views():
    # One list is the source of truth (BUILTIN_VIEWS, served by /api/views); registry.ts only
    # maps each built-in name to its bundled folder.
    text = REGISTRY_TS.read_text(encoding="utf-8")
    mapped = dict(re.findall(r'^\s*(\w+): \(\) => import\("\./(\w+)/index"\),$', text, re.M))
    assert sorted(mapped) == sorted(BUILTIN_VIEWS)
    assert all(name == folder for name, folder in mapped.items())
    for name in BUILTIN_VIEWS:
        assert (REGISTRY_TS.parent / name / "index.ts").is_file(), name


def test_tab_order_follows_the_product_list():
    # PRODUCT.md fixes the order of the views added after the comparison tab.
    names = list(BUILTIN_VIEWS)
    later = names[names.index("comparison") + 1 :]
    product = ["hparams", "pr_curves", "audio", "embeddings", "custom_scalars", "monitor"]
    assert [name for name in later if name in product] == product


def test_builtin_views_are_bundled(client):
    views = client.get("/api/views").json()["views"]
    assert [v["name"] for v in views] == list(BUILTIN_VIEWS)
    assert all(v["module"] is None for v in views)
    assert client.get("/views/scalars/index.js").status_code == 404


def _view_class(name: str, module: Any) -> type[View]:
    class ShippedView(View):
        title = "Shipped"

        def routes(self) -> Sequence[Any]:
            return []

        def frontend(self) -> FrontendMeta:
            if isinstance(module, Exception):
                raise module
            return FrontendMeta(es_module=module)

    ShippedView.name = name
    return ShippedView


def _app_with(monkeypatch: pytest.MonkeyPatch, provider: Any, **views: type[View]) -> Any:
    def registry() -> Any:
        reg = view_registry()
        for name, cls in views.items():
            reg.add(name, cls)
        return reg

    monkeypatch.setattr(app_module, "view_registry", registry)
    return create_app(provider, ["scalars", *views])


def test_a_view_that_ships_a_module_is_listed_with_its_url_and_served(
    monkeypatch, provider, tmp_path
):
    js = tmp_path / "notes.js"
    js.write_text("export function render(el) { el.textContent = 'hi'; }\n", encoding="utf-8")
    missing = tmp_path / "gone.js"
    app = _app_with(
        monkeypatch,
        provider,
        notes=_view_class("notes", js),
        lost=_view_class("lost", missing),
        raising=_view_class("raising", RuntimeError("no front end today")),
    )
    with TestClient(app) as c:
        views = {v["name"]: v for v in c.get("/api/views").json()["views"]}
        r = c.get("/views/notes/index.js")
        assert c.get("/views/lost/index.js").status_code == 404
    assert views["scalars"]["module"] is None
    assert views["notes"]["module"] == "/views/notes/index.js"
    assert views["notes"]["enabled"]
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/javascript")
    assert r.text == js.read_text(encoding="utf-8")
    assert "script-src 'self'" in r.headers["content-security-policy"]
    # a broken front end disables the tab with the reason; the board keeps running
    assert not views["lost"]["enabled"]
    assert str(missing) in views["lost"]["reason"]
    assert "not found" in views["lost"]["reason"]
    assert not views["raising"]["enabled"]
    assert "no front end today" in views["raising"]["reason"]


def _tags_provider() -> InMemoryProvider:
    p = InMemoryProvider()
    p.add_scalars("a", "loss", steps=[0, 1], values=[1.0, 0.5])
    p.add_scalars("a", "lr", steps=[0], values=[0.1])
    p.add_scalars("b", "loss", steps=[0], values=[2.0])
    return p


def test_the_installed_example_package_is_found_through_its_entry_point(example_view_site):
    with on_sys_path(example_view_site):
        assert "tag_counts" in view_registry().names()
        app = create_app(_tags_provider())
    module = Path(example_view_site) / "tensorsight_example_view" / "frontend.js"
    with TestClient(app) as c:
        views = {v["name"]: v for v in c.get("/api/views").json()["views"]}
        js = c.get(views["tag_counts"]["module"])
        counts = c.get("/api/views/tag_counts/counts?run=b&run=a").json()
        missing = c.get("/api/views/tag_counts/counts?run=nope")
        too_many = c.get("/api/views/tag_counts/counts?" + "&".join(["run=a"] * 1001))
    assert list(views)[-1] == "tag_counts"  # built-ins first, in their order
    assert views["tag_counts"] == {
        "name": "tag_counts",
        "title": "Tag counts",
        "enabled": True,
        "has_data": True,
        "reason": "",
        "module": "/views/tag_counts/index.js",
    }
    assert js.status_code == 200
    assert js.text == module.read_text(encoding="utf-8")
    assert "export function render(el, ctx)" in js.text
    assert counts == {
        "kinds": ["scalars"],
        "runs": [{"run": "b", "counts": {"scalars": 1}}, {"run": "a", "counts": {"scalars": 2}}],
    }
    assert missing.status_code == 404
    assert missing.json()["error"]["message"] == "Run 'nope' does not exist."
    assert too_many.status_code == 400


def test_the_example_view_is_inactive_without_runs(example_view_site):
    with on_sys_path(example_view_site):
        app = create_app(InMemoryProvider(), ["tag_counts"])
    with TestClient(app) as c:
        (view,) = c.get("/api/views").json()["views"]
    assert view["enabled"]
    assert not view["has_data"]
