from tensorsight.migrate.rules.accelerator.seeding import ReplaceSeedingRule
from tests.migrate._util import check


def test_manual_seed_all_with_drift_note():
    out = check(
        ReplaceSeedingRule,
        "import torch\ntorch.cuda.manual_seed_all(42)\n",
        "import torch\ntorch.manual_seed(42)\n",
        statuses=[("accelerator/seeding", "rewritten"), ("accelerator/seeding", "kept")],
    )
    assert out.sites[1].message.startswith("Drift:")
    assert "broader seeding" in out.sites[1].message


def test_no_op():
    check(ReplaceSeedingRule, "import torch\ntorch.manual_seed(1)\n", None, statuses=[])
