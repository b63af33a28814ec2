"""Semantic drift is always said: rewrites (and kept code) that can change numbers or
behaviour on some device get a kept row starting "Drift:"."""

import pytest

from tests.migrate._util import check, run


@pytest.mark.parametrize(
    ("code", "rule_id", "words"),
    [
        ("torch.backends.cuda.matmul.allow_tf32 = True", "accelerator/backend-knobs", "oneDNN"),
        ("torch.cuda.manual_seed_all(0)", "accelerator/seeding", "CPU generator"),
        ("ok = torch.cuda.is_initialized()", "accelerator/availability", "initialized"),
        ("s = torch.cuda.default_stream()", "accelerator/synchronize", "default stream"),
        ("e = torch.cuda.Event(enable_timing=True)", "accelerator/synchronize", "elapsed_time"),
        ('sd = torch.load("m.pt")', "accelerator/map-location", "saved on the CPU"),
        ("dl = DataLoader(ds, pin_memory=True)", "accelerator/pin-memory", "pinned"),
        ("c = torch.cuda.amp.autocast()", "accelerator/autocast", "bfloat16 on the CPU"),
        (
            "o = torch.optim.AdamW(ps, fused=True)",
            "accelerator/fused-optimizers",
            "round differently",
        ),
    ],
)
def test_drift_rows(code, rule_id, words):
    out = run("accelerator", f"import torch\nfrom torch.utils.data import DataLoader\n{code}\n")
    drift = [s for s in out.sites if s.message.startswith("Drift:")]
    assert [(s.rule_id, s.status, s.safety) for s in drift] == [(rule_id, "kept", "none")]
    assert words in drift[0].message


def test_no_drift_row_without_drift():
    out = check(
        "accelerator",
        """\
        import torch
        n = torch.cuda.device_count()
        o = torch.optim.AdamW(ps, fused=False)
        torch.backends.cuda.matmul.allow_tf32 = False
        """,
        """\
        import torch
        n = torch.accelerator.device_count()
        o = torch.optim.AdamW(ps, fused=False)
        torch.set_float32_matmul_precision("highest")
        """,
    )
    assert not [s for s in out.sites if s.message.startswith("Drift:")]


def test_unapplied_fix_gets_no_drift_row():
    """map-location drifts where it adds a location; a location it leaves is only listed."""
    out = run("accelerator", 'import torch\nsd = torch.load("m.pt", map_location="cuda:%d" % i)\n')
    assert [s.status for s in out.sites] == ["manual"]
