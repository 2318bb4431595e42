"""Helpers for the fingerprint tests: fingerprint a bundle the way the command does, find findings."""

from __future__ import annotations

from pathlib import Path

from vllm_triage.fingerprint.model import Finding, Fingerprint
from vllm_triage.pipeline import fingerprint

BUNDLES = Path(__file__).resolve().parent.parent / "fixtures" / "bundles"


def run(*paths: Path | str) -> Fingerprint:
    return fingerprint([str(p) for p in paths])


def ids(found: Fingerprint) -> list[str]:
    return [f.id for f in found.findings]


def finding(found: Fingerprint, finding_id: str) -> Finding:
    matches = [f for f in found.findings if f.id == finding_id]
    assert matches, f"no {finding_id} finding; got {ids(found)}"
    return matches[0]
