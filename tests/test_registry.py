from __future__ import annotations

from importlib import metadata

import pytest

from tensorsight._registry import EntryStatus, Registry, load_object
from tensorsight.errors import RegistryError


def test_register_and_get():
    reg: Registry[object] = Registry("metric")

    @reg.register("cosine")
    def cosine():
        return 1.0

    assert reg.get("cosine") is cosine
    assert reg.names() == ["cosine"]
    assert "cosine" in reg
    assert len(reg) == 1
    assert list(reg) == ["cosine"]


def test_lazy_string_entries_are_imported_on_first_get():
    reg: Registry[object] = Registry("thing")
    reg.add("dumps", "json:dumps")
    import json

    assert reg.get("dumps") is json.dumps


def test_duplicate_name_is_refused():
    reg: Registry[int] = Registry("metric")
    reg.add("a", 1)
    with pytest.raises(RegistryError, match="registered twice"):
        reg.add("a", 2)


def test_unknown_name_suggests_close_match_and_lists_choices():
    reg: Registry[int] = Registry("capture backend")
    reg.add("torch-ops", 1)
    reg.add("onnxrt", 2)
    with pytest.raises(RegistryError) as info:
        reg.get("torch-op")
    assert str(info.value) == (
        "Unknown capture backend 'torch-op'. Did you mean 'torch-ops'? Choices: torch-ops, onnxrt."
    )


def test_broken_entry_is_reported_unavailable_not_crashing():
    reg: Registry[object] = Registry("view")
    reg.add("good", "json:loads")
    reg.add("broken", "no_such_package_xyz.views:View")
    with pytest.raises(RegistryError, match="unavailable: ModuleNotFoundError"):
        reg.get("broken")
    status = reg.status()
    assert status[0] == EntryStatus("good", True)
    assert status[1].name == "broken"
    assert not status[1].available
    assert "no_such_package_xyz" in status[1].reason


def test_entry_points_add_third_party_entries(monkeypatch):
    ep = metadata.EntryPoint(name="extra", value="json:loads", group="tensorsight.test")
    builtin = metadata.EntryPoint(name="builtin", value="json:dumps", group="tensorsight.test")

    def fake_entry_points(*, group):
        assert group == "tensorsight.test"
        return [ep, builtin]

    monkeypatch.setattr(metadata, "entry_points", fake_entry_points)
    reg: Registry[object] = Registry("view", entry_point_group="tensorsight.test")
    reg.add("builtin", 1)
    import json

    assert reg.names() == ["builtin", "extra"]
    assert reg.get("extra") is json.loads
    assert reg.get("builtin") == 1  # built-ins win over third parties


@pytest.mark.parametrize("spec", ["json", ":loads", "json:"])
def test_load_object_rejects_malformed_specs(spec):
    with pytest.raises(RegistryError, match=r"expected 'package\.module:attribute'"):
        load_object(spec)


def test_load_object_follows_dotted_attributes():
    import os.path

    assert load_object("os:path.join") is os.path.join
