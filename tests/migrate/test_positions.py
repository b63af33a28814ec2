"""``_positions.starts`` gives the same starts as LibCST's ``PositionProvider``, for every node."""

from __future__ import annotations

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from tensorsight.migrate._positions import starts

CODES = {
    "nested": (
        "class Net(nn.Module):\n"
        "    @torch.no_grad()\n"
        "    # a comment\n"
        "    def f(self, x):  # trailing\n"
        "        if x.is_cuda:\n"
        "            y = (\n"
        "                x.cuda(non_blocking=True)\n"
        "                  + 1)\n"
        "        else: y = x; z = 'a\\\n"
        "b'\n"
        "        return [y.to(0) for _ in range(2)]\n"
    ),
    "crlf": "import torch\r\nx = torch.cuda.is_available()\r\n\r\ny = f'{x}'.cuda()\r\n",
    "tabs and strings": "if a:\n\tb = '''\ncuda\n'''; c = (b\n\t\t.cuda())\n",
    "decorated, no trailing newline": "@dec(\n    1)\nasync def g():\n    await x.cuda()",
}


@pytest.mark.parametrize("name", sorted(CODES))
def test_starts_equal_the_position_provider_for_every_node(name):
    module = cst.parse_module(CODES[name])
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    expected = {
        id(node): (r.start.line, r.start.column)
        for node, r in wrapper.resolve(PositionProvider).items()
    }
    nodes: list[cst.CSTNode] = []

    class Collect(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            nodes.append(node)
            return True

    module.visit(Collect())
    assert len(nodes) > 10
    assert starts(module, nodes) == {id(n): expected[id(n)] for n in nodes}
    for some in (nodes[3:5], [n for n in nodes if isinstance(n, cst.IndentedBlock)]):
        assert starts(module, some) == {id(n): expected[id(n)] for n in some}


def test_nodes_outside_the_module_and_no_nodes_give_nothing():
    module = cst.parse_module("x = 1\n")
    other = cst.parse_module("y = 2\n").body[0]
    assert starts(module, [other]) == {}
    assert starts(module, []) == {}
