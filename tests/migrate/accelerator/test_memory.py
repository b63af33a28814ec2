from tensorsight.migrate.rules.accelerator.memory import RULE_ID, ReplaceMemoryQueriesRule
from tests.migrate._util import check, run


def test_memory_queries_are_guarded():
    check(
        ReplaceMemoryQueriesRule,
        """\
        import torch as T
        used = T.cuda.memory_allocated() / 2**20
        T.cuda.empty_cache()
        """,
        """\
        import torch as T
        used = (T.accelerator.memory_allocated() if T.accelerator.is_available() else 0) / 2**20
        if T.accelerator.is_available():
            T.accelerator.empty_cache()
        """,
        statuses=[(RULE_ID, "rewritten"), (RULE_ID, "rewritten")],
    )


def test_runs_on_cpu():
    out = run(ReplaceMemoryQueriesRule, "import torch\nx = torch.cuda.max_memory_reserved()\n")
    namespace: dict[str, object] = {}
    exec(compile(out.new_code, "t.py", "exec"), namespace)
    assert namespace["x"] == 0


def test_no_op():
    check(ReplaceMemoryQueriesRule, "import torch\nx = torch.mps.current_allocated_memory\n", None)
