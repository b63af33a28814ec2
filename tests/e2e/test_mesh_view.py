"""The Mesh view (issue 22): meshes written by torch's SummaryWriter and ours, drawn in 3-D;
dragging turns the camera, the step slider changes the step, the canvas fits its card."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from torch.utils.tensorboard import SummaryWriter as TorchWriter

from tensorsight import SummaryWriter
from tensorsight.data import LogdirProvider
from tests.e2e.conftest import board_server, shot

pytestmark = pytest.mark.browser


def _sphere(n: int = 14) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A UV sphere stretched along z: vertices, triangles, colours by height."""
    lat = np.linspace(0, np.pi, n)
    lon = np.linspace(0, 2 * np.pi, 2 * n, endpoint=False)
    t, p = np.meshgrid(lat, lon, indexing="ij")
    v = np.stack([np.sin(t) * np.cos(p), np.sin(t) * np.sin(p), 2 * np.cos(t)], -1).reshape(-1, 3)
    faces = []
    m = 2 * n
    for i in range(n - 1):
        for j in range(m):
            a, b = i * m + j, i * m + (j + 1) % m
            c, d = a + m, b + m
            faces += [[a, b, d], [a, d, c]]
    h = (v[:, 2] - v[:, 2].min()) / np.ptp(v[:, 2])
    colors = np.stack([255 * h, 80 + 100 * (1 - h), 255 * (1 - h)], -1)
    return v[None].astype(np.float32), np.array(faces)[None], colors[None].astype(np.int32)


@pytest.fixture
def logdir(tmp_path: Path) -> Path:
    v, f, c = _sphere()
    rng = np.random.default_rng(1)
    cloud = rng.standard_normal((1, 400, 3)).astype(np.float32) * [1, 1, 0.3]
    for name, writer in (("torch", TorchWriter), ("ours", SummaryWriter)):
        with writer(str(tmp_path / name)) as w:
            for step in (0, 10):
                scale = 1.0 + step / 10
                w.add_mesh(
                    "shape",
                    torch.from_numpy(v * scale),
                    colors=torch.from_numpy(c),
                    faces=torch.from_numpy(f),
                    global_step=step,
                )
            w.add_mesh("cloud", torch.from_numpy(cloud), global_step=3)
    return tmp_path


def _card(page, mesh: str, run: str):
    return page.locator(f".mesh-card[data-mesh='{mesh}'][data-run='{run}']")


def test_meshes_draw_turn_and_step(page1280, logdir):
    page = page1280
    with board_server(LogdirProvider(logdir)) as url:
        page.goto(url + "/#mesh")
        page.wait_for_selector(".mesh-card canvas[data-drawn]")
        assert page.locator(".mesh-card").count() == 4  # 2 meshes x 2 runs
        for run in ("torch", "ours"):
            card = _card(page, "shape", run)
            card.locator("canvas[data-drawn]").wait_for()
            assert card.get_attribute("data-faces") == str(2 * 13 * 28)
            assert card.get_attribute("data-step") == "10"  # the newest step first
            cloud = _card(page, "cloud", run)
            cloud.locator("canvas[data-drawn='400']").wait_for()
            assert "point cloud" in cloud.locator(".mesh-info").inner_text()
        card = _card(page, "shape", "torch")
        canvas = card.locator("canvas")
        drawn = int(canvas.get_attribute("data-drawn"))
        assert 0 < drawn <= 2 * 13 * 28  # faces behind the camera are never drawn
        # the canvas fits its card: no wider than the card, 4:3
        fit = card.evaluate(
            "c => { const k = c.querySelector('canvas').getBoundingClientRect();"
            " const r = c.getBoundingClientRect();"
            " return [k.left >= r.left, k.right <= r.right + 0.5, k.width / k.height]; }"
        )
        assert fit[0]
        assert fit[1]
        assert abs(fit[2] - 4 / 3) < 0.02
        shot(page, "mesh-view")
        card.scroll_into_view_if_needed()
        shot(page, "mesh-view-shape")

        # drag the camera: yaw and pitch change, the mesh is drawn again
        yaw = float(canvas.get_attribute("data-yaw"))
        pitch = float(canvas.get_attribute("data-pitch"))
        box = canvas.bounding_box()
        cx, cy = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
        page.mouse.move(cx, cy)
        page.mouse.down()
        page.mouse.move(cx + 120, cy + 40, steps=6)
        page.mouse.up()
        page.wait_for_function(
            "([el, y]) => Math.abs(Number(el.dataset.yaw) - y) > 0.5",
            arg=[canvas.element_handle(), yaw],
        )
        assert float(canvas.get_attribute("data-pitch")) > pitch
        shot(page, "mesh-view-turned")

        # the wheel zooms in; "reset view" fits again
        distance = float(canvas.get_attribute("data-distance"))
        page.mouse.move(cx, cy)
        page.mouse.wheel(0, -400)
        page.wait_for_function(
            "([el, d]) => Number(el.dataset.distance) < d", arg=[canvas.element_handle(), distance]
        )
        card.locator(".mesh-reset").click()
        page.wait_for_function(
            "([el, y]) => Math.abs(Number(el.dataset.yaw) - y) < 1e-3",
            arg=[canvas.element_handle(), yaw],
        )

        # the step slider shows step 0, the camera kept
        slider = card.locator(".mesh-step")
        slider.evaluate("el => { el.value = '0'; el.dispatchEvent(new Event('input')); }")
        page.wait_for_selector(".mesh-card[data-mesh='shape'][data-run='torch'][data-step='0']")
        assert "0 (2 steps)" in card.locator(".mesh-step-label").inner_text()

        # arrow keys turn a focused mesh
        before = float(canvas.get_attribute("data-yaw"))
        canvas.focus()
        page.keyboard.press("ArrowRight")
        page.wait_for_function(
            "([el, y]) => Number(el.dataset.yaw) !== y", arg=[canvas.element_handle(), before]
        )

        # the filter narrows to one mesh name; deselecting a run drops its cards
        page.fill("#mesh-filter", "^cloud$")
        page.wait_for_function("() => document.querySelectorAll('.mesh-card').length === 2")
        page.locator('#run-list input[data-run="ours"]').uncheck()
        page.wait_for_function("() => document.querySelectorAll('.mesh-card').length === 1")
        assert _card(page, "cloud", "torch").count() == 1
        shot(page, "mesh-view-cloud")


_PIXELS = """c => {
    const g = c.getContext('2d');
    const d = g.getImageData(0, 0, c.width, c.height).data;
    let ink = 0, orange = 0;
    for (let i = 0; i < d.length; i += 4) {
        const [r, gg, b] = [d[i], d[i + 1], d[i + 2]];
        if (r > 240 && gg > 240 && b > 240) continue;  // the background, #fbfbfd
        ink++;
        if (r > 200 && gg > 90 && gg < 170 && b < 70) orange++;
    }
    const m = (Math.floor(c.height / 2) * c.width + Math.floor(c.width / 2)) * 4;
    return {ink, orange, centre: [d[m], d[m + 1], d[m + 2]]};
}"""


def test_the_writers_config_dict_is_applied(page1280, tmp_path):
    """torch's add_mesh config_dict: camera fov and position, lights, material colour and
    point size are applied; what a canvas cannot draw is named on the card."""
    v, f, c = _sphere()
    cloud = np.random.default_rng(2).standard_normal((1, 300, 3)).astype(np.float32)
    red_light = {
        "camera": {"cls": "PerspectiveCamera", "fov": 30, "position": [0, 0, 12], "far": 50},
        "lights": [
            {"cls": "DirectionalLight", "color": "#ff0000", "intensity": 1, "position": [0, 0, 1]}
        ],
        "material": {"cls": "MeshStandardMaterial", "roughness": 1, "metalness": 0},
    }
    with TorchWriter(str(tmp_path / "torch")) as w:
        w.add_mesh("lit", torch.from_numpy(v), colors=torch.from_numpy(c),
                   faces=torch.from_numpy(f), config_dict=red_light)  # fmt: skip
        w.add_mesh("dots", torch.from_numpy(cloud))
        w.add_mesh("bigdots", torch.from_numpy(cloud), config_dict={
            "material": {"cls": "PointsMaterial", "size": 0.25, "color": "#ff8000"}})  # fmt: skip
    page = page1280
    with board_server(LogdirProvider(tmp_path)) as url:
        page.goto(url + "/#mesh")
        page.wait_for_function("() => document.querySelectorAll('canvas[data-drawn]').length === 3")
        lit = _card(page, "lit", "torch")
        canvas = lit.locator("canvas")
        assert canvas.get_attribute("data-fov") == "30.0"
        assert abs(float(canvas.get_attribute("data-distance")) - 12) < 0.01
        assert abs(float(canvas.get_attribute("data-yaw"))) < 1e-3  # looking down -z
        info = lit.locator(".mesh-info").inner_text()
        assert "config: fov 30°, camera position, 1 light ·" in info
        assert "not applied: camera.far, material.metalness, material.roughness" in info
        # only a red light: the sphere's green and blue vertex colours go dark
        r, g, b = canvas.evaluate(_PIXELS)["centre"]
        assert r > 60
        assert g < 10
        assert b < 10
        lit.scroll_into_view_if_needed()
        shot(page, "mesh-view-config")
        # "reset view" goes back to the writer's camera, not a fitted one
        box = canvas.bounding_box()
        page.mouse.move(box["x"] + 100, box["y"] + 100)
        page.mouse.wheel(0, 300)
        page.wait_for_function(
            "el => Number(el.dataset.distance) > 12.5", arg=canvas.element_handle()
        )
        lit.locator(".mesh-reset").click()
        page.wait_for_function(
            "el => Math.abs(Number(el.dataset.distance) - 12) < 0.01", arg=canvas.element_handle()
        )
        # material.size in the mesh's units and material.color on a cloud without colours
        small = _card(page, "dots", "torch").locator("canvas").evaluate(_PIXELS)
        big = _card(page, "bigdots", "torch").locator("canvas").evaluate(_PIXELS)
        assert big["ink"] > 1.4 * small["ink"]  # the axes are ink in both
        assert big["orange"] > 0.6 * big["ink"]  # the rest: axes, antialiased edges
        assert small["orange"] < 0.1 * small["ink"]
        assert "point size 0.25" in _card(page, "bigdots", "torch").inner_text()
        _card(page, "bigdots", "torch").scroll_into_view_if_needed()
        shot(page, "mesh-view-config-points")
