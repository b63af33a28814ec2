"""The file pre-scan (``_prescan``): it never skips a file that a rule would change or report.

The property: on a corpus of snippets (one or more per rule, tricky spellings, and files
that only mention CUDA in comments, docstrings or unrelated names), every rule set gives
the same result with and without the pre-scan, in several spellings of each snippet.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from textwrap import indent

import pytest

from tensorsight.migrate import runner
from tensorsight.migrate._prescan import Need, Prescan, lex
from tensorsight.migrate.model import Changed, Failed, FileResult
from tensorsight.migrate.rules.accelerator.map_location import ReplaceMapLocationRule
from tensorsight.migrate.rulesets import load_ruleset

TARGETS = ("accelerator", "npu", "xpu", "mps")

#: Each of these makes at least one rule set change or report something.
MATCHING = {
    "backend-flow": (
        "import torch.distributed as dist\nbackend = 'nccl'\n"
        "dist.init_process_group(backend=backend)\n"
    ),
    "device-flow": (
        "import torch\nloc = 'cuda:{}'.format(rank)\nstate = torch.load(p, map_location=loc)\n"
    ),
    "ddp-device-ids": (
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"
        "model = DDP(model, device_ids=[rank])\n"
    ),
    "device-type-test": "device_type = 'cuda' if 'cuda' in device else 'cpu'\n",
    "fused-optimizer": "import torch\nopt = torch.optim.AdamW(ps, fused=True)\n",
    "to-index-flow": "n = 0\nx = x.to(n)\n",
    "to-index-semicolon": "import torch\na = 3\nk = a; t = torch.zeros(1, device=k)\n",
    # names without an index hint: only the flow prepass knows they are integers
    "to-index-copies": (
        "import os\nwho = int(os.environ['RANK'])\nlocal = who\nshifted = local * 2\n"
        "x = x.to(shifted)\n"
    ),
    "to-index-annotated": "def put(x, r: int):\n    return x.to(r)\n",
    "to-index-option": (
        "import argparse\np = argparse.ArgumentParser()\n"
        "p.add_argument('--card', type=int, default=0)\nargs = p.parse_args()\n"
        "x = x.to(args.card)\n"
    ),
    "to-index-attribute": (
        "class T:\n    def __init__(self, x, gid: int):\n        self.gid = gid\n"
        "        self.x = x.to(self.gid)\n"
    ),
    "to-index-param": (
        "import torch.multiprocessing as mp\ndef f(k):\n    x.to(k)\n"
        "def g(n):\n    y.to(n + 1)\n"
        'if __name__ == "__main__":\n    mp.spawn(f, nprocs=2)\n    g(n=0)\n'
    ),
    "availability": "import torch\nok = torch.cuda.is_available()\n",
    "device-count": "import torch\nn = torch.cuda.device_count()\n",
    "set-device": "import torch\ntorch.cuda.set_device(0)\n",
    "sync-alias": "from torch.cuda import synchronize as sync\nsync()\n",
    "module-alias": "from torch import cuda\ncuda.empty_cache()\n",
    "assign-alias": "import torch as T\nc = T.cuda\nc.synchronize()\n",
    "memory": "import torch\nprint(torch.cuda.memory_allocated())\n",
    "seed": "import torch\ntorch.cuda.manual_seed(0)\n",
    "device-string": 'import torch\nd = torch.device("cuda")\n',
    "device-index": 'import torch\nd = torch.device("cuda", 1)\n',
    "device-keyword": 'import torch\nx = torch.zeros(3, device="cuda:1")\n',
    "device-fstring": 'import torch\nx = torch.zeros(3, device=f"cuda:{i}")\n',
    "device-ifexp": 'import torch\ndevice = "cuda" if flag else "cpu"\n',
    "escaped-string": 'import torch\nd = torch.device("\\x63uda")\n',
    "string-in-fstring": "import torch\nprint(f\"{x.to('cuda')}\")\n",
    "to-int": "import torch\nx = torch.zeros(3).to(0)\n",
    "to-rank": "import torch\ny = x.to(local_rank)\n",
    "to-star": "import torch\ny = x.to(*ranks)\n",
    "to-attr-comment": "import torch\ny = x.to(\n    # which one\n    args.gpu\n)\n",
    "device-int-paren": "import torch\ny = f(device=(0))\n",
    "cuda-method": "import torch\nm = model.cuda()\n",
    "cuda-method-kw": "import torch\nx = torch.randn(2).cuda(non_blocking=True)\n",
    "amp-autocast": "import torch\nwith torch.cuda.amp.autocast():\n    pass\n",
    "autocast": 'import torch\nwith torch.autocast("cuda", dtype=torch.bfloat16):\n    pass\n',
    "scaler": "from torch.cuda.amp import GradScaler\ns = GradScaler()\n",
    "amp-scaler": 'import torch\ns = torch.amp.GradScaler("cuda")\n',
    "custom-fwd": "import torch\n@torch.cuda.amp.custom_fwd\ndef f(ctx, x):\n    return x\n",
    "nccl": 'import torch.distributed as dist\ndist.init_process_group("nccl")\n',
    "nccl-compare": 'import torch.distributed as dist\nok = dist.get_backend() == "nccl"\n',
    "load": 'import torch\nsd = torch.load("m.pt")\n',
    "load-alias": 'from torch import load as L\nsd = L("m.pt")\n',
    "pin-memory": "from torch.utils.data import DataLoader\ndl = DataLoader(ds, pin_memory=True)\n",
    "pin-device": 'import torch\ndl = DataLoader(ds, pin_memory_device="cuda")\n',
    "typed-tensor": "import torch\nx = torch.cuda.FloatTensor([1, 2])\n",
    "typed-tensor-import": "from torch.cuda import LongTensor\nx = LongTensor(4)\n",
    "cudnn": "import torch\ntorch.backends.cudnn.benchmark = True\n",
    "tf32": "import torch\ntorch.backends.cuda.matmul.allow_tf32 = True\n",
    "nvtx": 'import torch\nwith torch.cuda.nvtx.range("x"):\n    pass\n',
    "is-cuda": "import torch\nok = t.is_cuda\n",
    "cuda-graph": "import torch\ng = torch.cuda.CUDAGraph()\n",
    "triton": "import triton\n@triton.jit\ndef k(x):\n    pass\n",
    "unmapped": "import torch\ntorch.cuda.ipc_collect()\n",
    "visible-devices": 'import os\nos.environ["CUDA_VISIBLE_DEVICES"] = "0"\n',
    "nccl-env": 'import os\nv = os.environ.get("NCCL_DEBUG")\n',
    "jit-script": "import torch\n@torch.jit.script\ndef f(x):\n    return x\n",
    "float64": "import torch\nx = torch.zeros(2, dtype=torch.float64)\n",
    "double": "import torch\ny = x.double()\n",
    "process-group": 'import torch.distributed as dist\ndist.init_process_group(backend="gloo")\n',
    "tf-device": 'import tensorflow as tf\nwith tf.device("/GPU:0"):\n    pass\n',
    "tf-compat-device": 'import tensorflow.compat.v1 as v1\nwith v1.device("/gpu:0"):\n    pass\n',
    "tf-availability": "import tensorflow as tf\nok = tf.test.is_gpu_available()\n",
    "tf-gpu-config": 'import tensorflow as tf\ng = tf.config.list_physical_devices("GPU")\n'
    "tf.config.experimental.set_memory_growth(g[0], True)\n",
    "tf-mixed-precision": "from tensorflow import keras\n"
    'keras.mixed_precision.set_global_policy("mixed_float16")\n',
    "tf-xla-cudnn": 'import os\nimport tensorflow as tf\nos.environ["TF_CUDNN_X"] = "1"\n',
    "tf-horovod": "import horovod.tensorflow as hvd\nr = hvd.local_rank()\n",
}

#: CUDA only in comments, docstrings, prose strings or other names: never parsed.
SKIPPED = {
    "comment": "# torch.cuda.synchronize() and x.cuda()\nimport torch\nx = 1\n",
    "docstring": '"""Moves x.cuda() and uses "nccl" and torch.load."""\nimport torch\n',
    "code-in-string": 's = "torch.cuda.synchronize(); x.to(0)"\n',
    "prose-string": 'import torch\nmsg = "use cuda for speed"\n',
    "json-load": 'import json\nd = json.load(open("f"))\n',
    "device-variable": "import torch\ny = x.to(device)\nz = torch.zeros(2, device=device)\n",
    "tensor-hints": "import torch\ndef f(x: torch.Tensor) -> torch.Tensor:\n    return x\n",
    "cuda-in-a-name": "self._cuda_graph_capture_health_check()\n",
    "to-dtype": "import torch\ny = x.to(torch.float16)\n",
    "int-names-elsewhere": "import torch\ndim = 1\ny = x.to(device).sum(dim=dim)\n",
    "to-param-unknown": (
        'import torch\ndef f(k):\n    x.to(k)\nif __name__ == "__main__":\n    f(torch.float16)\n'
    ),
    "nested-braces": 'import torch\nprint(f"{x:{width}} it\'s {{literal}}")\n',
}

#: Odd spellings: wanted by the pre-scan, whatever the rules then make of them.
ODD = {
    "to-continued": "import torch\ny = x.to \\\n    (0)\n",
    "to-spaced": "import torch\ny = x . to ( ( 0 ) )\n",
}

#: The lexer cannot split these reliably: always parsed (the results then agree too).
UNSURE = {
    "unterminated": 'import torch\nx = "cuda\n',
    "stray-brace": 'import torch\nprint(f"}")\n',
    "pep701-quotes": 'import torch\nprint(f"{d["cuda"]}")\n',
}


def _variants(code: str) -> Iterator[tuple[str, str]]:
    """The snippet as written, inside a function, under CUDA-mentioning comments and a
    docstring, and with ``torch`` imported under another name."""
    yield "plain", code
    yield "in-function", "def wrapper():\n" + indent(code, "    ")
    yield (
        "commented",
        '"""Runs on cuda."""\n# cuda, nccl, torch.load\n'
        + code.replace("\n", "  # .cuda() 'nccl'\n", 1),
    )
    if "import torch\n" in code:
        yield (
            "aliased",
            code.replace("import torch\n", "import torch as tt\n").replace("torch.", "tt."),
        )


def _migrate(tmp_path: Path, code: str, target: str, prescan: bool) -> FileResult:
    path = tmp_path / "snippet.py"
    path.write_text(code, encoding="utf-8")
    return runner.migrate_file(runner.Job(str(path), "snippet.py"), target, False, prescan=prescan)


def _disagreements(tmp_path: Path, corpus: dict[str, str]) -> list[str]:
    """``name/variant/target`` of every case whose result depends on the pre-scan."""
    out = []
    for name, code in corpus.items():
        for variant, text in _variants(code):
            for target in TARGETS if variant == "plain" else ("accelerator",):
                with_scan = _migrate(tmp_path, text, target, prescan=True)
                without = _migrate(tmp_path, text, target, prescan=False)
                if with_scan != without:
                    out.append(f"{name}/{variant}/{target}")
    return out


def test_prescan_never_changes_a_result(tmp_path):
    corpus = {**MATCHING, **SKIPPED, **ODD, **UNSURE}
    assert _disagreements(tmp_path, corpus) == []


def test_the_corpus_exercises_every_rule(tmp_path):
    seen: set[str] = set()
    for name, code in MATCHING.items():
        found = False
        for target in TARGETS:
            result = _migrate(tmp_path, code, target, prescan=False)
            seen.update(s.rule_id for s in result.sites)
            found = found or isinstance(result, Changed) or bool(result.sites)
        assert found, f"snippet {name!r} matches no rule: the property would be vacuous"
    rules = {rule.RULE_ID for t in TARGETS for rule in load_ruleset(t).rules}
    assert rules - seen == set()


@pytest.mark.parametrize("target", TARGETS)
def test_files_without_cuda_tokens_are_not_parsed(target):
    scan = runner._prescan(target)
    assert [name for name, code in SKIPPED.items() if scan.wanted(code)] == []


def test_unsure_and_odd_files_are_parsed(tmp_path):
    scan = runner._prescan("accelerator")
    assert all(scan.wanted(code) for code in (*UNSURE.values(), *ODD.values()))
    result = _migrate(tmp_path, UNSURE["unterminated"], "accelerator", prescan=True)
    assert isinstance(result, Failed)


def test_a_rule_with_a_wrong_need_is_caught(tmp_path, monkeypatch):
    """Planted bug: map-location declares a name that torch.load never has."""
    monkeypatch.setattr(ReplaceMapLocationRule, "TOKENS", (Need(names=("torch", "loads")),))
    runner._prescan_of.cache_clear()
    try:
        found = _disagreements(tmp_path, {"load": MATCHING["load"], "nvtx": MATCHING["nvtx"]})
    finally:
        monkeypatch.undo()
        runner._prescan_of.cache_clear()
    assert found == [
        "load/plain/accelerator",
        "load/plain/npu",
        "load/plain/xpu",
        "load/plain/mps",
        "load/in-function/accelerator",
        "load/commented/accelerator",
        "load/aliased/accelerator",
    ]


def test_import_alias_of_torch_load_is_migrated(tmp_path):
    """The substring gate skipped this file: no ``torch.load`` and no ``load(`` in it."""
    result = _migrate(tmp_path, MATCHING["load-alias"], "accelerator", prescan=True)
    assert isinstance(result, Changed)
    assert 'sd = L("m.pt", map_location=_device)' in result.new_code


@pytest.mark.parametrize("target", TARGETS)
def test_every_builtin_rule_declares_its_tokens(target):
    undeclared = [r.RULE_ID for r in load_ruleset(target).rules if r.needs() is None]
    assert undeclared == [], "give these rules TOKENS, or every file of a project is parsed"


def test_a_rule_without_tokens_makes_every_file_wanted():
    scan = Prescan([(Need(names=("cuda",)),), None])
    assert scan.always
    assert scan.wanted("x = 1\n")
    assert not Prescan([(Need(names=("cuda",)),), ()]).wanted("x = 1\n")


def test_lexer_separates_comments_strings_and_code():
    out = lex("a.cuda()  # torch.load\ns = 'nccl'  # x\nt = b'cuda'\nu = '\\x6e' + r'\\d'\n")
    assert {"a", "cuda", "s", "t", "u"} <= out.names
    assert "load" not in out.names
    assert "nccl" not in out.names
    assert out.strings == ("nccl", "n", "\\d")  # bytes are not device strings
    assert out.code == "a.cuda()  \ns = ''  \nt = b''\nu = '' + r''\n"
    assert not out.unsure


def test_lexer_reads_strings_inside_fstring_fields_and_triple_quotes():
    out = lex("x = f'{d[\"cuda:0\"]} {y!r:>{w}}'\ndoc = '''it's \"cuda\"\n'''\n")
    assert out.strings == ('{d["cuda:0"]} {y!r:>{w}}', "cuda:0", 'it\'s "cuda"\n')
    assert {"d", "y", "w"} <= out.names  # replacement fields are code
    assert not out.unsure


def test_lexer_normalises_unicode_identifiers_as_python_does():
    assert "cuda" in lex("x.\uff43uda()\n").names  # fullwidth c


def test_confirm_runs_only_where_the_cheap_fields_hold_and_decides():
    seen: list[str] = []

    def has_int_rank(text: str) -> bool:
        seen.append(text)
        return "rank = 0" in text

    scan = Prescan([(Need(code=r"\bto\s*\(\s*[^\W\d]", confirm=has_int_rank),)])
    assert scan.wanted("rank = 0\nx.to(rank)\n")
    assert not scan.wanted("rank = f()\nx.to(rank)\n")
    assert not scan.wanted("x = 1\n")  # no `.to(name)`: confirm is not even asked
    assert seen == ["rank = 0\nx.to(rank)\n", "rank = f()\nx.to(rank)\n"]


@pytest.mark.parametrize(
    ("code", "could"),
    [
        ("n = 0\nx.to(n)\n", True),
        ("a = int(s)\nb = a\nc = b + 1\nx.to(c)\n", True),  # copies and arithmetic
        ("a = 3\nk = a; t = torch.zeros(1, device=k)\n", True),  # statements on one line
        ("def f(x, r: int):\n    return x.to(r)\n", True),
        ("for k in range(2):\n    x.to(k)\n", True),
        ("x.to(cfg['slot'])\n", True),  # a subscript: its key is the slot
        ("d = torch.device('cpu')\nx.to(d)\n", False),
        ("d = x.device\ny.to(d)\n", False),
        ("x.to(torch.float16)\n", False),
        ("x = 1\n", False),  # no device slot
    ],
)
def test_the_integer_name_check_is_a_cheap_superset(code, could):
    """``to-index``'s fast check says no only where the flow prepass finds no integer."""
    from tensorsight.migrate.rules.accelerator import to_index

    assert to_index._could_be_index(code) is could
    if not could:
        assert not to_index._has_index_names(code)


def test_active_names_the_rules_that_can_match_and_none_when_no_rule_can():
    scan = Prescan([(Need(names=("cuda",)),), (Need(strings=("nccl",)),), ()])
    assert scan.active("x.cuda()\n") == (True, False, True)  # `()` rides along
    assert scan.active("b = 'nccl'\n") == (False, True, True)
    assert scan.active("x = 1  # cuda\n") is None
    assert Prescan([None, (Need(names=("cuda",)),)]).active("x = 1\n") == (True, False)


def test_device_none_is_not_a_name_to_follow():
    from tensorsight.migrate.rules.accelerator import to_index

    assert not to_index._could_be_index("None = 0\nx = torch.zeros(1, device=None)\n")
