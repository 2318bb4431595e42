"""The writing pass remembers short texts it found clean and the learning pass texts it has read
(a fleet row repeats its strings hundreds of times). What it remembers must never hide a secret."""

from __future__ import annotations

from vllm_triage.bundle.redact.payload import redact_payload
from vllm_triage.bundle.redact.redactor import Redactor

VALUE = "q8Zr4LmN2pXw7TyB5vHc9KdJ3sFg6QaE"
NOTE = f"note: {VALUE}"


def test_a_text_found_clean_is_searched_again_once_a_secret_is_learned() -> None:
    redactor = Redactor()
    assert redactor.redact(NOTE) == NOTE  # nothing says this word is a secret yet
    redactor.learn(f"API_KEY={VALUE}")
    assert VALUE not in redactor.redact(NOTE)


def test_repeated_strings_are_each_redacted_and_counted() -> None:
    token = "hf_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ012345"
    payload = {"runs": [{"cmd": f"HF_TOKEN={token} vllm serve x", "phase": "config"} for _ in range(50)]}
    redactor = Redactor()
    clean = redact_payload(payload, redactor)
    assert all(token not in run["cmd"] for run in clean["runs"])
    assert len({run["cmd"] for run in clean["runs"]}) == 1  # one secret, one placeholder
    assert [run["phase"] for run in clean["runs"]] == ["config"] * 50
    assert sum(redactor.occurrences.values()) == 50
