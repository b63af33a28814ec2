"""compute(): filter-normalised random and PCA landscapes of a tiny MLP on synthetic data."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tensorsight.landscape as tl  # noqa: E402
from tensorsight.errors import UsageError  # noqa: E402
from tensorsight.landscape.compute import _random_directions  # noqa: E402


def _mlp(seed: int = 0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.ReLU(), torch.nn.Linear(8, 1)
    )


def _data():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(32, 4, generator=g)
    return [(x, (x.sum(1, keepdim=True) > 0).float())]


LOSS = torch.nn.functional.binary_cross_entropy_with_logits


def _trajectory(model, data, steps=6):
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    ckpts = []
    for _ in range(steps):
        for x, y in data:
            opt.zero_grad()
            LOSS(model(x), y).backward()
            opt.step()
        ckpts.append({k: v.detach().clone() for k, v in model.state_dict().items()})
    return ckpts


def test_random_shape_centre_and_exact_restore():
    model, data = _mlp(), _data()
    model.train()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    calls = []
    ls = tl.compute(model, LOSS, data, grid=5, span=0.5, progress=lambda d, t: calls.append((d, t)))
    assert ls.values.shape == (5, 5)
    assert ls.x.tolist() == [-0.5, -0.25, 0.0, 0.25, 0.5]
    assert ls.path is None
    # weights (and BN buffers) restored bit for bit; the train mode too
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k]), k
        assert v.numpy().tobytes() == before[k].numpy().tobytes()
    assert model.training
    # the centre is the plain loss in eval mode
    model.eval()
    with torch.no_grad():
        plain = float(LOSS(model(data[0][0]), data[0][1]))
    assert ls.values[2, 2] == plain
    assert calls[-1] == (25, 25)
    assert [d for d, _ in calls] == list(range(1, 26))
    # a real landscape: not flat, finite
    assert np.isfinite(ls.values).all()
    assert ls.values.max() > ls.values[2, 2]
    assert not ls.values.flags.writeable
    assert ls.metadata["filter_normalized"] is True


def test_filter_normalisation_matches_weight_norms_and_zeroes_biases():
    model = _mlp()
    params = list(model.parameters())
    d1, d2 = _random_directions(torch, params, seed=3)
    for p, d in zip(params, d1, strict=True):
        if p.dim() <= 1:
            assert torch.count_nonzero(d) == 0
        else:
            wn = p.detach().double().reshape(p.shape[0], -1).norm(dim=1)
            dn = d.reshape(d.shape[0], -1).norm(dim=1)
            torch.testing.assert_close(dn, wn, rtol=1e-9, atol=1e-9)
    assert not torch.equal(d1[0], d2[0])


def test_deterministic_with_seed():
    data = _data()
    a = tl.compute(_mlp(), LOSS, data, grid=3, seed=7)
    b = tl.compute(_mlp(), LOSS, data, grid=3, seed=7)
    c = tl.compute(_mlp(), LOSS, data, grid=3, seed=8)
    assert np.array_equal(a.values, b.values)
    assert not np.array_equal(a.values, c.values)


def test_pca_path_ends_at_centre_and_restore_is_exact():
    model, data = _mlp(), _data()
    ckpts = _trajectory(model, data)
    model.load_state_dict(ckpts[-1])
    before = [p.detach().clone() for p in model.parameters()]
    ls = tl.compute(model, LOSS, data, directions="pca", grid=5, checkpoints=ckpts)
    assert ls.values.shape == (5, 5)
    assert ls.path is not None
    assert ls.path.shape == (6, 3)
    assert ls.path[-1, 0] == 0.0
    assert ls.path[-1, 1] == 0.0
    assert ls.path[-1, 2] == ls.values[2, 2]
    # the default span fits the whole path
    assert np.abs(ls.path[:, :2]).max() <= ls.x[-1]
    # training went downhill along the path
    assert ls.path[0, 2] > ls.path[-1, 2]
    ev = ls.metadata["explained_variance"]
    assert 0 < ev[1] <= ev[0] <= 1
    for p, w in zip(model.parameters(), before, strict=True):
        assert torch.equal(p, w)


def test_random_directions_project_checkpoints():
    model, data = _mlp(), _data()
    ckpts = _trajectory(model, data, steps=3)
    ls = tl.compute(model, LOSS, data, grid=3, checkpoints=ckpts)
    assert ls.path is not None
    assert ls.path.shape == (3, 3)
    assert abs(ls.path[-1, 0]) < 1e-9
    assert abs(ls.path[-1, 1]) < 1e-9


def test_under_autocast_every_point_sees_its_own_weights():
    # autocast caches the bf16 casts of the weights until its context exits; each grid point
    # must be evaluated with the weights moved there, not the first point's cached casts
    model, data = _mlp(), _data()

    def loss(out, y):
        return LOSS(out.float(), y)

    plain = tl.compute(model, loss, data, grid=5)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        reduced = tl.compute(model, loss, data, grid=5)
    assert np.ptp(reduced.values) > 0.5 * np.ptp(plain.values)
    np.testing.assert_allclose(reduced.values, plain.values, rtol=0.05, atol=0.02)


def test_nonfinite_loss_is_nan():
    model = torch.nn.Linear(2, 1)

    def loss(out, target):
        return torch.log(out.mean() - target.mean())  # negative argument -> NaN

    ls = tl.compute(model, loss, [(torch.ones(4, 2), torch.full((4, 1), 100.0))], grid=3)
    assert np.isnan(ls.values).all()


def test_weights_restored_when_loss_raises():
    model = _mlp()
    before = [p.detach().clone() for p in model.parameters()]
    calls = []

    def loss(out, target):
        calls.append(1)
        if len(calls) == 4:
            msg = "boom"
            raise RuntimeError(msg)
        return LOSS(out, target)

    with pytest.raises(RuntimeError, match="boom"):
        tl.compute(model, loss, _data(), grid=3)
    for p, w in zip(model.parameters(), before, strict=True):
        assert torch.equal(p, w)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"directions": "pcaa"}, "directions 'pcaa'"),
        ({"grid": 1}, "grid 1"),
        ({"grid": True}, "grid True"),
        ({"grid": 10_000}, "grid 10000"),
        ({"span": math.nan}, "span nan"),
        ({"span": -1.0}, "span -1.0"),
        ({"directions": "pca"}, "got 0 checkpoints"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(UsageError, match=match):
        tl.compute(_mlp(), LOSS, _data(), **kwargs)


def test_bad_batches_and_checkpoints():
    with pytest.raises(UsageError, match="batches: empty"):
        tl.compute(_mlp(), LOSS, [])
    model = _mlp()
    with pytest.raises(UsageError, match=r"has no parameter '0\.weight'"):
        tl.compute(model, LOSS, _data(), directions="pca", checkpoints=[{}, {}])
    bad = {k: v.clone() for k, v in model.state_dict().items()}
    bad["3.weight"] = torch.zeros(2, 8)
    with pytest.raises(UsageError, match=r"'3\.weight' has shape \(2, 8\)"):
        tl.compute(model, LOSS, _data(), checkpoints=[bad])
    same = model.state_dict()
    with pytest.raises(UsageError, match="fewer than two directions"):
        tl.compute(model, LOSS, _data(), directions="pca", checkpoints=[same, same])


def test_write_round_trips_through_summary_writer(tmp_path):
    from tensorsight import SummaryWriter
    from tensorsight.summary import read_logdir

    model, data = _mlp(), _data()
    ckpts = _trajectory(model, data, steps=3)
    ls = tl.compute(model, LOSS, data, directions="pca", grid=3, checkpoints=ckpts)
    with SummaryWriter(str(tmp_path / "run")) as w:
        ls.write(w, "landscape/pca", step=3)
    rec = read_logdir(tmp_path).landscapes("run", "landscape/pca")[0]
    assert rec.step == 3
    assert np.array_equal(rec.values, ls.values)
    assert np.array_equal(rec.path, ls.path)
    assert rec.metadata["directions"] == "pca"
