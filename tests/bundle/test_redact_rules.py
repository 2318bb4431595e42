"""The redaction rules (rules/redact/*.toml): their examples, their speed on hostile input, the
secret-name policy, and the library API that report rendering uses."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from vllm_triage.bundle.redact import rules as redact_rules
from vllm_triage.bundle.redact import rules_check as redact_check
from vllm_triage.bundle.redact.leakscan import scan_text
from vllm_triage.bundle.redact.redactor import MaskOptions, Redactor, redact_text
from vllm_triage.cli import cli
from vllm_triage.core.errors import RuleError

FIXTURES = Path(__file__).parent.parent / "fixtures"


def test_every_example_behaves_and_every_pattern_is_fast() -> None:
    assert redact_check.check(redact_rules.load()) == []


def test_rules_check_still_passes_with_the_redact_tables() -> None:
    result = CliRunner().invoke(cli, ["rules", "check"])
    assert result.exit_code == 0, result.output
    assert "rules/redact/" not in result.output


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("HF_TOKEN", "token"),
        ("VLLM_API_KEY", "key"),
        ("DB_PASSWORD", "password"),
        ("apiKey", "key"),
        ("AWS_SECRET_ACCESS_KEY", "secret"),
        ("--api-key", "key"),
        ("GOOGLE_APPLICATION_CREDENTIALS_JSON", "credential"),
        ("TOKENIZERS_PARALLELISM", None),
        ("MAX_TOKENS", None),
        ("HF_TOKEN_PATH", None),
        ("SSH_AUTH_SOCK", None),
        ("PWD", None),
        ("key", None),
    ],
)
def test_secret_names(name: str, kind: str | None) -> None:
    assert redact_rules.builtin().names.secret_kind(name) == kind


def test_a_bad_rule_file_is_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / "x.toml").write_text(
        '[[secret]]\nid = "x"\nkind = "x"\npattern = "abc"\nmust_match = ["abc"]\n'
    )
    with pytest.raises(RuleError, match=r"x\.toml: redact rule x: pattern has no \(\?P<value>"):
        redact_rules.load([str(tmp_path)])
    (tmp_path / "x.toml").write_text(
        '[[secret]]\nid = "x"\nkind = "x"\npattern = "(?P<value>a)"\nbogus = 1\n'
    )
    with pytest.raises(RuleError, match="unknown field"):
        redact_rules.load([str(tmp_path)])


def test_a_custom_rule_from_a_rules_dir(tmp_path: Path) -> None:
    (tmp_path / "corp.toml").write_text(
        '[[secret]]\nid = "corp-ticket-key"\nkind = "corp-key"\nshape = true\n'
        "pattern = '(?P<value>CORP-[0-9]{8})'\nmust_match = [\"CORP-12345678\"]\n"
    )
    rules = redact_rules.load([str(tmp_path)])
    text, found = redact_text("use CORP-12345678 here", rules=rules)
    assert text == "use <redacted:corp-key:1> here"
    assert [(r.kind, r.rule, r.line) for r in found] == [("corp-key", "corp-ticket-key", 1)]


def test_the_library_api_keeps_placeholders_stable_across_calls() -> None:
    redactor = Redactor(masks=MaskOptions(hosts=True))
    env = "HF_TOKEN=" + "hf_" + "a1B2" * 9 + "\nHOSTNAME=gpu-node-4\n"
    log = "gpu-node-4 said: token " + "hf_" + "a1B2" * 9 + " rejected\n"
    redactor.learn(env)
    redactor.learn(log)
    assert redactor.redact(log, file="log") == "<masked:host:1> said: token <redacted:hf-token:1> rejected\n"
    assert redactor.redact(env, file="env") == "HF_TOKEN=<redacted:hf-token:1>\nHOSTNAME=<masked:host:1>\n"
    assert [p["placeholder"] for p in redactor.pseudonyms()] == ["<masked:host:1>", "<redacted:hf-token:1>"]
    assert redactor.pseudonyms()[1]["files"] == ["env", "log"]


def test_a_known_secret_is_replaced_where_it_stands_bare() -> None:
    redactor = Redactor()
    redactor.learn("DB_PASSWORD=Tr1cky-Passw0rd\n")
    out = redactor.redact("psql failed for Tr1cky-Passw0rd; Tr1cky-Passw0rdX is another word\n")
    assert out == "psql failed for <redacted:password:1>; Tr1cky-Passw0rdX is another word\n"


def test_leak_scan_reads_through_nothing_but_placeholders() -> None:
    assert scan_text('HF_TOKEN=<redacted:hf-token:1>\n"api_key": "<redacted:key:2>"\n') == []
    # (not `ghp_` + 36 x: a run of x is a mask, names.toml trivial_values)
    leaks = scan_text(
        "HF_TOKEN=<redacted:hf-token:1>tail\nnote: " + "gh" + "p_" + "Kq7" * 12 + "\n", file="f"
    )
    assert [(leak.line, leak.rule) for leak in leaks] == [(1, "assignment"), (2, "github-token")]


def test_unknown_rule_to_disable_is_an_error() -> None:
    with pytest.raises(RuleError, match="no redaction rule named nope"):
        Redactor(disabled=["nope"])


def test_the_projects_own_fixtures_lose_only_their_planted_secrets() -> None:
    """False positives: every log, nvidia-smi, inspect, collect_env, command and request fixture of
    the parsers goes through redaction; only the few fake keys written into them may change."""
    changed: dict[str, list[str]] = {}
    redactor = Redactor()
    files = [p for p in sorted(FIXTURES.rglob("*")) if p.is_file() and "bundles" not in p.parts]
    texts = {p: p.read_text(encoding="utf-8", errors="replace") for p in files}
    for text in texts.values():
        redactor.learn(text)
    for path, text in texts.items():
        if redactor.redact(text, file=path.name) != text:
            changed.setdefault(path.name, [])
    kinds = {(r.file, r.kind) for r in redactor.redactions}
    allowed_files = {
        "curl_chat.sh",
        "powershell-docker.txt",
        "exports_then_command.sh",
        "vllm_service.env",
        "pasted_env_grep.md",
        "docker-run-variables.sh",
        "launch_with_env_prefix.sh",
    }
    assert set(changed) <= allowed_files, sorted(set(changed) - allowed_files)
    assert "curl_chat.sh" in changed  # the Bearer key written into that fixture
    assert all(kind in ("token", "key", "openai-key", "hf-token") for _, kind in kinds), kinds


def test_a_hostile_log_line_does_not_hang_redaction() -> None:
    lines = ["a=" * 200_000, "x:" * 200_000, "-" * 400_000, "key" * 100_000 + "=", '"' * 300_000]
    started = time.monotonic()
    clean, _ = redact_text("\n".join(lines) + "\n", masks=MaskOptions(hosts=True, ips=True, users=True))
    assert time.monotonic() - started < 20
    assert clean.count("\n") == len(lines)
