"""The projector's files read back: torch's writer, tensorboardX and ours; damaged files."""

from __future__ import annotations

import io

import numpy as np
import pytest
import tensorboardX
import torch
from google.protobuf import text_format
from PIL import Image
from tensorboard.plugins.projector import projector_config_pb2
from torch.utils.tensorboard import SummaryWriter as TorchWriter

from tensorsight import SummaryWriter
from tensorsight.summary import read_logdir
from tensorsight.summary.kinds.embedding import EmbeddingInfo
from tensorsight.summary.kinds.embedding_decode import (
    parse_config,
    parse_metadata,
    parse_tensors,
    split_tensor_path,
)
from tensorsight.summary.projector import load_embedding, read_sprite
from tensorsight.summary.reader import CorruptRecordWarning

RNG = np.random.default_rng(7)
MAT_A = RNG.standard_normal((20, 5)).astype(np.float32)
MAT_B = RNG.standard_normal((10, 4)).astype(np.float32)
LABELS = [f"p{i}" for i in range(20)]
TABLE = [[f"q{i}", str(i % 3)] for i in range(10)]


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("projector")
    images = torch.rand(20, 3, 8, 8)
    with TorchWriter(str(d / "torch")) as w:
        w.add_embedding(torch.from_numpy(MAT_A), LABELS, images, global_step=3, tag="feat/a")
        w.add_embedding(
            torch.from_numpy(MAT_B), TABLE, global_step=5, metadata_header=["name", "cls"]
        )
    with SummaryWriter(d / "ours") as w:
        w.add_embedding(MAT_A, LABELS, images.numpy(), global_step=3, tag="feat/a")
        w.add_embedding(MAT_B, TABLE, global_step=5, metadata_header=["name", "cls"])
    with tensorboardX.SummaryWriter(str(d / "tbx")) as w:
        w.add_embedding(MAT_B, [str(i) for i in range(10)], global_step=1, tag="t")
        w.add_embedding(MAT_B * 2, [str(i) for i in range(10)], global_step=2, tag="t")
    return d


@pytest.mark.parametrize("run", ["torch", "ours"])
def test_every_embedding_of_torch_and_our_writer_is_read(logdir, run):
    log = read_logdir(logdir)
    assert log.tags(run)["embeddings"] == ["default", "feat/a"]
    (a,) = log.embeddings(run, "feat/a")
    assert (a.step, a.tensor_name, a.sprite_dim) == (3, "feat/a:00003", (8, 8))
    loaded = load_embedding(a)
    assert loaded.problems == ()
    np.testing.assert_allclose(loaded.matrix, MAT_A, rtol=1e-6)
    assert loaded.matrix.dtype == np.float32
    assert loaded.metadata is not None
    assert loaded.metadata.columns == ("label",)
    assert [r[0] for r in loaded.metadata.rows] == LABELS
    data, media = read_sprite(a)
    sprite = Image.open(io.BytesIO(data))
    assert media == "image/png"
    assert sprite.size == (5 * 8, 5 * 8)  # ceil(sqrt(20)) = 5 columns of 8-pixel images
    (b,) = log.embeddings(run, "default")
    assert (b.step, b.sprite_dim, b.sprite_path) == (5, None, None)
    loaded = load_embedding(b)
    np.testing.assert_allclose(loaded.matrix, MAT_B, rtol=1e-6)
    assert loaded.metadata.columns == ("name", "cls")
    assert loaded.metadata.rows[4] == ("q4", "1")


def test_tensorboardx_appended_config_lists_each_embedding_once(logdir):
    log = read_logdir(logdir)
    steps = [r.step for r in log.embeddings("tbx", "t")]
    assert steps == [1, 2]
    np.testing.assert_allclose(load_embedding(log.embeddings("tbx", "t")[1]).matrix, MAT_B * 2)


def test_a_rewritten_config_adds_only_the_new_embeddings(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_embedding(MAT_B, global_step=1)
        log = read_logdir(tmp_path)
        assert [r.step for r in log.embeddings(".", "default")] == [1]
        w.add_embedding(MAT_B, global_step=2)
        w.add_embedding(MAT_A, global_step=2, tag="other")
    result = log.reload()
    assert result.changed["."]["embeddings"] == ("default", "other")
    assert [r.step for r in log.embeddings(".", "default")] == [1, 2]
    assert log.run_info(".").first_wall_time is None or log.run_info(".").first_wall_time > 0


def test_config_text_format_as_protobuf_writes_it():
    config = projector_config_pb2.ProjectorConfig()
    config.model_checkpoint_path = "ckpt"
    e = config.embeddings.add(tensor_name='a "b"\t\u00fc:00002', tensor_path="00002/a/tensors.tsv")
    e.metadata_path = "00002/a/metadata.tsv"
    e.sprite.image_path = "00002/a/sprite.png"
    e.sprite.single_image_dim.extend([28, 14])
    e.tensor_shape.extend([10, 3])
    config.embeddings.add(tensor_name="var_only")  # a checkpoint variable: no tensor_path
    for as_one_line in (False, True):
        text = text_format.MessageToString(config, as_one_line=as_one_line)
        assert parse_config("# comment\n" + text) == [
            EmbeddingInfo(
                'a "b"\t\u00fc:00002',
                "00002/a/tensors.tsv",
                "00002/a/metadata.tsv",
                "00002/a/sprite.png",
                (28, 14),
            )
        ]
    assert parse_config("embeddings < tensor_path: 'x' 'y' ; >")[0].tensor_path == "xy"


@pytest.mark.parametrize(
    ("text", "message"),
    [("embeddings { tensor_path: 'a'", "missing '}'"), ("embeddings { : }", "line 1")],
)
def test_a_config_that_is_not_text_format_says_where(text, message):
    with pytest.raises(ValueError, match=message):
        parse_config(text)


def test_tag_and_step_come_from_the_path_then_the_name():
    assert split_tensor_path(EmbeddingInfo("x", "00012/a%2fb%25/tensors.tsv")) == ("a/b%", 12)
    assert split_tensor_path(EmbeddingInfo("emb:7", "vectors.tsv")) == ("emb", 7)
    assert split_tensor_path(EmbeddingInfo("emb", "vectors.tsv")) == ("emb", 0)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"1\t2\n3\n", "line 2: 1 values, expected 2"),
        (b"1\t2\n\n3\tx\n", "line 3: 'x' is not a number"),
        (b"\n \n", "no rows"),
        (b"1\t2\t3\n" * 4, "4 rows x 3 values is over the limit of 10"),
    ],
)
def test_malformed_tensors_name_the_line(data, message):
    with pytest.raises(ValueError, match=message):
        parse_tensors(data, max_values=10)


def test_tensors_accept_crlf_nan_and_exponents():
    out = parse_tensors(b"1e3 -2.5\r\nnan\tinf\r\n", max_values=4)
    assert out.shape == (2, 2)
    assert out[0].tolist() == [1000.0, -2.5]
    assert np.isnan(out[1, 0])
    assert np.isinf(out[1, 1])


def test_metadata_one_column_has_no_header_several_have_one():
    assert parse_metadata(b"a\nb\n", 2).rows == (("a",), ("b",))
    table = parse_metadata(b"x\ty\n1\t2\n", 1)
    assert (table.columns, table.rows) == (("x", "y"), (("1", "2"),))
    with pytest.raises(ValueError, match="3 labels for 2 points"):
        parse_metadata(b"a\nb\nc\n", 2)
    with pytest.raises(ValueError, match="line 3: 1 columns, expected 2"):
        parse_metadata(b"x\ty\n1\t2\n3\n", 2)


def _entry(folder, text):
    (folder / "projector_config.pbtxt").write_text(text)
    return read_logdir(folder)


def test_damaged_files_are_problems_naming_file_and_line(tmp_path):
    sub = tmp_path / "00000" / "default"
    sub.mkdir(parents=True)
    (sub / "tensors.tsv").write_text("1\t2\n3\t4\n5\n")
    (sub / "metadata.tsv").write_text("a\nb\n")
    log = _entry(
        tmp_path,
        'embeddings { tensor_name: "default:00000" tensor_path: "00000/default/tensors.tsv" '
        'metadata_path: "00000/default/metadata.tsv" }',
    )
    (record,) = log.embeddings(".", "default")
    loaded = load_embedding(record)
    assert loaded.matrix is None
    assert "tensors.tsv" in loaded.problems[0]
    assert "line 3: 1 values, expected 2" in loaded.problems[0]
    (sub / "tensors.tsv").write_text("1\t2\n3\t4\n5\t6\n")
    loaded = load_embedding(record)
    assert loaded.matrix.shape == (3, 2)
    assert loaded.metadata is None
    assert "metadata.tsv" in loaded.problems[0]
    assert "2 labels for 3 points" in loaded.problems[0]
    (sub / "tensors.tsv").unlink()
    assert "cannot stat" in load_embedding(record).problems[0]


def test_a_matrix_over_the_tensor_limit_is_refused_before_parsing(tmp_path, monkeypatch):
    with SummaryWriter(tmp_path) as w:
        w.add_embedding(np.zeros((600, 500)))
    monkeypatch.setenv("TENSORSIGHT_MAX_TENSOR_MIB", "1")
    (record,) = read_logdir(tmp_path).embeddings(".", "default")
    loaded = load_embedding(record)
    assert loaded.matrix is None
    assert "600 rows x 500 values is over the limit of 262144 values" in loaded.problems[0]


def test_a_broken_config_or_a_path_outside_its_folder_is_a_problem(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "secret.tsv").write_text("1\t2\n")
    with pytest.warns(CorruptRecordWarning, match="not protobuf text format"):
        log = _entry(tmp_path / "a", "embeddings { tensor_path: ")
    assert log.tags(".")["embeddings"] == []
    with pytest.warns(CorruptRecordWarning, match="outside the config's folder"):
        log = _entry(tmp_path / "b", 'embeddings { tensor_name: "x" tensor_path: "../secret.tsv" }')
    assert log.tags(".")["embeddings"] == []


def test_a_sprite_that_is_no_image_is_not_served(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_embedding(np.zeros((4, 2)), label_img=np.zeros((4, 3, 2, 2)))
    (record,) = read_logdir(tmp_path).embeddings(".", "default")
    (tmp_path / "00000" / "default" / "sprite.png").write_bytes(b"<html>")
    from tensorsight.errors import InputFileError

    with pytest.raises(InputFileError, match="neither PNG nor JPEG"):
        read_sprite(record)
    with pytest.raises(InputFileError, match="over the 3-byte limit"):
        read_sprite(record, max_bytes=3)
