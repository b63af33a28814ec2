"""The summary writer and reader under protobuf's pure-Python runtime.

``PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python`` is a user's setting, and importing MindSpore
sets it for the whole process. That runtime attaches nested message classes
(``Summary.Value``, ``SummaryMetadata.PluginData``) only in generated code, not to classes
made from a descriptor pool as ours are, so every write once failed there with an
AttributeError. This runs a round trip of every kind in a child process with that runtime.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np

_SCRIPT = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    from google.protobuf.internal import api_implementation
    import tensorsight
    from tensorsight.summary import SummaryWriter

    out, ms_dir = sys.argv[1], sys.argv[2]
    with SummaryWriter(out) as w:
        for step in range(3):
            w.add_scalar("loss", 1.0 / (step + 1), step)
            w.add_histogram("w", np.arange(10.0) * step, step)
        w.add_image("img", np.zeros((3, 4, 4), dtype=np.uint8), 0)
        w.add_text("note", "hello", 0)
        w.add_tensor("t", np.ones((2, 2), dtype=np.float32), 0)
        w.add_pr_curve("pr", np.array([0, 1, 1, 0]), np.array([0.1, 0.9, 0.8, 0.3]), 0)
        w.add_hparams({"lr": 0.1, "opt": "sgd"}, {"hp/acc": 0.5}, run_name=".", global_step=2)
        w.add_data_graph("pipe", {"nodes": [{"id": "a", "type": "T", "label": "a",
                                             "params": {}}], "edges": []})
        w.add_embedding(np.eye(3, dtype=np.float32), metadata=["a", "b", "c"], tag="emb")
    log = tensorsight.read_logdir(out)
    runs = {run: {k: sorted(v) for k, v in log.tags(run).items() if v} for run in log.runs}
    found = {
        "runtime": api_implementation.Type(),
        "runs": runs,
        "loss": log.scalars(".", "loss").values.tolist(),
        "hparams": [dict(s.hparams) for s in log.hparams(".", "_hparams_/session_start_info")],
    }
    if ms_dir:
        ms = tensorsight.read_logdir(ms_dir)
        found["mindspore"] = sorted(t for tags in ms.tags(".").values() for t in tags)
    print(json.dumps(found))
    """
)


def test_every_kind_round_trips_under_the_pure_python_runtime(tmp_path):
    from tests.conftest import SHARED_DATA

    ms_dir = SHARED_DATA / "mindspore"
    env = {**os.environ, "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION": "python"}
    result = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(tmp_path / "logs"), str(ms_dir) * ms_dir.is_dir()],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    found = json.loads(result.stdout.strip().splitlines()[-1])
    assert found["runtime"] == "python"
    tags = found["runs"]["."]
    assert tags["scalars"] == ["hp/acc", "loss"]
    assert tags["histograms"] == ["w"]
    assert tags["images"] == ["img"]
    assert tags["text"] == ["note/text_summary"]
    assert "pr" in tags["pr_curves"]
    assert tags["data_graphs"] == ["pipe"]
    assert tags["embeddings"]
    assert found["loss"] == [1.0, 0.5, float(np.float32(1.0 / 3.0))]  # stored as float32
    assert found["hparams"] == [{"lr": 0.1, "opt": "sgd"}]
    if ms_dir.is_dir():
        assert "mean_logit" in found["mindspore"]
