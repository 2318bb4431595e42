"""A user's rule table is refused with its file and id named, the same way in every rule family
(engine rules and redaction rules share core/tables.py's checks)."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_triage.bundle.redact import rules as redact_rules
from vllm_triage.core.errors import RuleError
from vllm_triage.engine import rules as engine_rules

RULE = """
[[rule]]
id = "user.oom"
kind = "error"
phase = "request"
pattern = "CUDA out of memory"
explain = "the GPU ran out of memory"
must_match = ["torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"]
"""


def test_a_good_user_rule_loads(tmp_path: Path) -> None:
    (tmp_path / "user.toml").write_text(RULE, encoding="utf-8")
    loaded = engine_rules.load([str(tmp_path)], include_builtin=False)
    assert [r.id for r in loaded.rules] == ["user.oom"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ('must_not_match = "CUDA out of memory"\n', "user.oom: 'must_not_match' must be a list of strings"),
        ('refs = "https://github.com/vllm-project/vllm/issues/1"\n', "'refs' must be a list of strings"),
        ('must_mach = ["x"]\n', "user.oom: unknown field(s) must_mach"),
    ],
)
def test_a_bad_engine_rule_is_named(tmp_path: Path, extra: str, message: str) -> None:
    (tmp_path / "user.toml").write_text(RULE + extra, encoding="utf-8")
    with pytest.raises(RuleError) as caught:
        engine_rules.load([str(tmp_path)], include_builtin=False)
    assert message in str(caught.value)
    assert "user.toml" in str(caught.value)


def test_a_rule_without_id_is_refused_in_both_families(tmp_path: Path) -> None:
    (tmp_path / "user.toml").write_text(RULE.replace('id = "user.oom"\n', ""), encoding="utf-8")
    with pytest.raises(RuleError, match="a rule has no id"):
        engine_rules.load([str(tmp_path)], include_builtin=False)
    redact_dir = tmp_path / "redact"
    redact_dir.mkdir()
    (redact_dir / "user.toml").write_text(
        '[[secret]]\nkind = "token"\npattern = "(?P<value>tok_[a-z]{8})"\n', encoding="utf-8"
    )
    with pytest.raises(RuleError, match=r"a \[\[secret\]\] table has no id"):
        redact_rules.load([str(redact_dir)])
