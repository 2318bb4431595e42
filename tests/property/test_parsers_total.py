"""Every parser of the fingerprint registry, and triage, is total on generated text (hypothesis):
whatever it is given it either reads it or refuses it with a documented refusal (InputError /
RuleError, exit 4), and what it returns goes through json.dumps (the CLI's --format json).

Inputs are built from the project's own fixtures (lines of them, in any order, cut anywhere,
with generated junk, quotes, brackets and control characters between) so that the examples reach
past each parser's sniffing into its grammar. The budget is small: the long campaign is
benchmarks/fuzz.py; this is the guard in the default suite.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from fuzz_mutate import OWN_FIXTURES  # noqa: E402

from vllm_triage.core.errors import ExitCode, TriageError
from vllm_triage.ingest.decode import check_text, decode_all
from vllm_triage.parsers.registry import REGISTRY

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
# role → the fixture folders written in that format (the rest of the fixtures are mixed in too):
# the fuzz campaign's own table, so the two keep seeding each parser from the same fixtures.
OWN = {role: folders for role, folders in OWN_FIXTURES.items() if role != "triage"}
BUDGET = settings(max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck))


def _lines(folders: tuple[str, ...]) -> list[str]:
    lines: list[str] = []
    for folder in folders:
        for path in sorted((FIXTURES / folder).rglob("*")):
            if path.is_file():
                lines += path.read_text("utf-8", "replace").splitlines(keepends=True)[:400]
    return lines


def _text(role: str) -> st.SearchStrategy[str]:
    own, anything = _lines(OWN[role]), _lines(tuple(sorted({d for ds in OWN.values() for d in ds})))
    line = st.one_of(
        st.sampled_from(own),
        st.sampled_from(anything),
        st.sampled_from(own).map(lambda s: s[: len(s) // 2]),  # cut mid-line
        st.text(st.sampled_from("\"'{}[]()<>\\|,;:=$`# \t\r\x00\x1b-aZ9é"), max_size=40),
        st.text(max_size=60),
    )
    return st.lists(line, max_size=60).map("".join)


def _is_refusal(exc: BaseException) -> bool:
    return isinstance(exc, TriageError) and exc.exit_code == ExitCode.INPUT


def _result_json(result: Any) -> str:
    return json.dumps(
        {
            "kind": result.kind,
            "knobs": {k: v.to_json() for k, v in result.knobs.items()},
            "facts": {k: v.to_json() for k, v in result.facts.items()},
            "notes": result.notes,
            "problems": [p.to_json() for p in result.problems],
        }
    )


def _check_parser(role: str, text: str) -> None:
    module = REGISTRY[role]
    try:
        module.looks_like(text)
        result = module.read(text, "x.txt", "gpu")
    except Exception as exc:
        if not _is_refusal(exc):
            raise
        return
    assert _result_json(result)


def _parser_test(role: str):
    @BUDGET
    @given(text=_text(role))
    def test(text: str) -> None:
        _check_parser(role, text)

    test.__name__ = f"test_{role}_is_total"
    return test


# One property per parser: a failure names the parser in the test id.
test_vllm_log_is_total = _parser_test("vllm_log")
test_nvidia_smi_is_total = _parser_test("nvidia_smi")
test_collect_env_is_total = _parser_test("collect_env")
test_container_inspect_is_total = _parser_test("container_inspect")
test_launch_command_is_total = _parser_test("launch_command")
test_environment_is_total = _parser_test("environment")
test_request_is_total = _parser_test("request")


def test_every_registered_parser_has_a_property() -> None:
    assert {f.role for f in REGISTRY.formats()} == set(OWN), (
        "a parser was added to the registry: give it a property here"
    )


@settings(max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(text=_text("vllm_log"), encoding=st.sampled_from(["utf-8", "utf-16", "latin-1", "utf-8-sig"]))
def test_bytes_are_decoded_or_refused(text: str, encoding: str) -> None:
    """The decode step every parser sits behind: any bytes, any encoding → text or a refusal."""
    data = text.encode(encoding, "replace")
    try:
        decoded = decode_all(data, check_text(data[:65536], "x.txt"))
    except Exception as exc:
        if not _is_refusal(exc):
            raise
        return
    assert isinstance(decoded, str)


@pytest.fixture(scope="module")
def compiled():
    from vllm_triage.pipeline import load_rules

    return load_rules()


@settings(max_examples=12, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(text=_text("vllm_log"))
def test_triage_is_total(compiled, text: str) -> None:
    from vllm_triage.ingest.sources import Source
    from vllm_triage.pipeline import triage_sources

    data = text.encode("utf-8", "surrogatepass")
    source = Source(name="server.log", opener=lambda: io.BytesIO(data), size=len(data), role="vllm_log")
    try:
        result = triage_sources([source], compiled=compiled)
    except Exception as exc:
        if not _is_refusal(exc):
            raise
        return
    assert json.loads(json.dumps(result.to_json()))["schema"].startswith("vllm-triage.triage/")
