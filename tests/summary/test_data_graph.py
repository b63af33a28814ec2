"""add_data_graph: DataLoader / Dataset pipelines become nodes with parameters and edges."""

from __future__ import annotations

import itertools
import json

import pytest

from tensorsight import SummaryWriter
from tensorsight.summary.data_graph import describe_pipeline
from tensorsight.summary.kinds.data_graph import validate
from tests.summary._tb import load

torch = pytest.importorskip("torch")
data = torch.utils.data


class Normalize:
    """A torchvision-style transform (torchvision itself is not installed)."""

    def __init__(self, mean, std) -> None:
        self.mean, self.std = mean, std

    def __call__(self, x):
        return (x - self.mean[0]) / self.std[0]


class RandomCrop:
    def __init__(self, size, padding=None) -> None:
        self.size, self.padding = size, padding

    def __call__(self, x):
        return x


class Compose:
    def __init__(self, transforms) -> None:
        self.transforms = transforms

    def __call__(self, x):
        for t in self.transforms:
            x = t(x)
        return x


class Images(data.Dataset):
    def __init__(self, n, transform=None) -> None:
        self.n, self.transform, self.root = n, transform, "/data/images ✓"

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        x = torch.full((2,), float(i))
        return self.transform(x) if self.transform else x


def _pipeline():
    train = Images(10, Compose([RandomCrop(32, padding=4), Normalize((0.5,), (0.25,))]))
    extra = data.TensorDataset(torch.zeros(6, 2))
    both = data.ConcatDataset([data.Subset(train, [0, 2, 4]), extra])
    return data.DataLoader(both, batch_size=4, shuffle=True, num_workers=0, drop_last=True)


def _by_type(graph):
    return {n["type"]: n for n in graph["nodes"]}


def test_dataloader_stages_and_params():
    graph = validate("g", describe_pipeline(_pipeline()))
    nodes = _by_type(graph)
    loader = nodes["DataLoader"]["params"]
    assert loader["batch_size"] == 4
    assert loader["drop_last"] is True
    assert loader["num_workers"] == 0
    assert loader["pin_memory"] is False
    assert loader["len"] == 2
    assert nodes["RandomSampler"]["params"]["len"] == 9
    assert nodes["ConcatDataset"]["params"]["len"] == 9
    assert nodes["Subset"]["params"] == {"len": 3, "indices": 3}
    assert nodes["Images"]["params"]["root"] == "/data/images ✓"
    assert nodes["RandomCrop"]["params"] == {"size": 32, "padding": 4}
    assert nodes["Normalize"]["params"] == {"mean": [0.5], "std": [0.25]}
    assert nodes["Compose"]["params"] == {"count": 2}
    assert nodes["TensorDataset"]["params"]["tensors"] == [
        "Tensor(shape=[6, 2], dtype=torch.float32)"
    ]
    assert nodes["function"]["label"] == "default_collate"


def test_edges_follow_the_data():
    graph = describe_pipeline(_pipeline())
    ids = {n["type"]: n["id"] for n in graph["nodes"]}
    edges = {tuple(e) for e in graph["edges"]}
    chain = ["Images", "Compose", "RandomCrop", "Normalize", "Subset", "ConcatDataset"]
    for src, dst in itertools.pairwise(chain):
        assert (ids[src], ids[dst]) in edges, (src, dst)
    assert (ids["TensorDataset"], ids["ConcatDataset"]) in edges
    assert (ids["ConcatDataset"], ids["DataLoader"]) in edges
    assert (ids["RandomSampler"], ids["DataLoader"]) in edges
    assert (ids["DataLoader"], ids["function"]) in edges


def test_a_dataset_attribute_that_is_not_a_dataset_is_a_param():
    class Named(data.Dataset):
        def __init__(self) -> None:
            self.dataset = "cifar10"

        def __getitem__(self, i):
            return i

    graph = describe_pipeline(Named())
    assert [n["type"] for n in graph["nodes"]] == ["Named"]
    assert graph["nodes"][0]["params"] == {"dataset": "cifar10"}


def test_plain_dataset_and_cycles():
    graph = describe_pipeline(data.TensorDataset(torch.zeros(3)))
    assert [n["type"] for n in graph["nodes"]] == ["TensorDataset"]

    class Loop(data.Dataset):
        def __getitem__(self, i):
            return i

    loop = Loop()
    loop.dataset = loop  # a wrapper that points at itself must not recurse forever
    graph = describe_pipeline(loop)
    assert graph["nodes"][-1]["params"] == {"truncated": True}


def test_written_and_read_back_by_tensorboard(tmp_path):
    with SummaryWriter(tmp_path) as writer:
        writer.add_data_graph("train", _pipeline(), 3)
    event = load(tmp_path).Tensors("train")[0]
    assert event.step == 3
    payload = json.loads(event.tensor_proto.string_val[0])
    assert payload["version"] == 1
    assert {n["type"] for n in payload["nodes"]} >= {"DataLoader", "Normalize", "Subset"}
