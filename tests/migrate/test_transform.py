"""The single traversal: prologue placement, imports, formatting, aliases, whole rule set."""

from tensorsight.migrate._resolve import collect_facts
from tests.migrate._util import PROLOGUE, check, run


def test_prologue_goes_after_the_import_block_and_docstring():
    out = run(
        "accelerator",
        '''\
        """Doc."""
        from __future__ import annotations

        import os
        try:
            import numpy as np
        except ImportError:
            np = None

        X = torch.device("cuda")
        import torch
        ''',
    )
    lines = out.new_code.splitlines()
    # torch is bound late, so the prologue goes below that import
    assert lines[-1].startswith("_device = torch.accelerator")
    assert lines.index("X = _device") < lines.index("import torch")


def test_comments_and_formatting_are_preserved():
    before = """\
    import torch

    # Pick the device.
    def main(  x ,y ):   # odd spacing stays
        torch.cuda.synchronize()   # wait
        return x.to( "cuda" )  # move
    """
    out = run("accelerator", before)
    assert "def main(  x ,y ):   # odd spacing stays" in out.new_code
    assert "torch.get_device_module(_device).synchronize()   # wait" in out.new_code
    assert "return x.to( _device.type )  # move" in out.new_code
    assert "# Pick the device." in out.new_code


def test_whole_ruleset_with_aliases_leaves_no_dead_or_missing_imports():
    check(
        "accelerator",
        """\
        import torch as T
        import torch.cuda.amp as amp
        from torch.cuda import synchronize as sync, memory_allocated
        cuda = T.cuda

        def step(model, batch):
            with amp.autocast(dtype=T.float16):
                loss = model(batch)
            sync()
            mem = memory_allocated()
            return loss, mem, cuda.is_available()
        """,
        "import torch as T\n"
        + PROLOGUE.replace("torch.", "T.")
        + """\
cuda = T.cuda

def step(model, batch):
    with T.autocast(_device.type, dtype=T.float16):
        loss = model(batch)
    T.get_device_module(_device).synchronize()
    mem = T.accelerator.memory_allocated() if T.accelerator.is_available() else 0
    return loss, mem, T.accelerator.is_available()
""",
    )


def test_imports_still_used_elsewhere_are_kept():
    out = run(
        "accelerator",
        """\
        import torch
        from torch.cuda import synchronize, ipc_collect
        synchronize()
        ipc_collect()
        """,
    )
    assert "from torch.cuda import ipc_collect" in out.new_code
    assert "synchronize," not in out.new_code


def test_facts_resolve_aliases_and_torch_values():
    import libcst as cst

    src = (
        "import torch as T\nfrom torch import nn\nfrom torch.cuda import synchronize as s\n"
        "class Net(nn.Module): pass\nclass Big(Net): pass\nm = Big()\nx = T.zeros(1)\n"
        "cuda = T.cuda\ndef f(t: T.Tensor): pass\n"
    )
    facts = collect_facts(cst.parse_module(src), src)
    assert {k: b.qualified for k, b in facts.bindings.items()} == {
        "T": "torch",
        "nn": "torch.nn",
        "s": "torch.cuda.synchronize",
        "cuda": "torch.cuda",
    }
    assert facts.torch_values == {"m", "x", "t"}
    assert facts.module_level_imports == {"T"}


def test_device_name_does_not_clash():
    out = run("accelerator", 'import torch\n_device = 3\nx = torch.zeros(1, device="cuda")\n')
    assert "device=_device_1.type" in out.new_code
    assert "_device_1 = torch.accelerator" in out.new_code


def test_only_statements_with_trigger_words_are_rewritten_and_positions_stay_exact():
    before = """\
    #!/usr/bin/env python
    # header comment
    '''Doc.'''
    import torch; import os


    @decorate(
        "x",
    )
    def f(x):  # no trigger words in here
        return x * 2
    a = 1; b = torch.zeros(1).cuda()
    """
    out = run("accelerator", before)
    lines = out.new_code.splitlines()
    assert lines[:2] == ["#!/usr/bin/env python", "# header comment"]
    assert lines[4:7] == [
        "",
        "# tensorsight migrate: the accelerator PyTorch finds (CUDA, NPU, XPU, MPS, ...), else"
        " the CPU.",
        PROLOGUE.splitlines()[-1],
    ]
    assert lines[-1] == "a = 1; b = torch.zeros(1).to(_device)"
    [site] = out.sites
    assert (site.line, site.column) == (12, 12)


def test_no_imports_at_all_puts_import_and_prologue_before_first_statement():
    out = run("accelerator", "# comment\nx = y.to('cuda')\n")
    assert out.new_code == ("# comment\nimport torch\n" + PROLOGUE + "x = y.to(_device.type)\n")


def test_syntax_newer_than_this_python_uses_the_whole_module_pass():
    import sys

    import pytest

    if sys.version_info >= (3, 12):
        pytest.skip("needs a Python whose ast rejects `type` statements")
    out = run("accelerator", "type Alias = int\nimport torch\nok = torch.cuda.is_available()\n")
    assert out.new_code.endswith("ok = torch.accelerator.is_available()\n")
    assert [(s.line, s.column) for s in out.sites] == [(3, 6)]
