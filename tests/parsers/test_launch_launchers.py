"""The launcher names of the fingerprint contract are declared once; every reader keeps to them."""

from __future__ import annotations

from launch_helpers import FIXTURES, read

from vllm_triage.parsers.launch.launchers import LAUNCHERS


def test_every_fixture_gives_a_declared_launcher_and_every_declared_one_is_seen():
    seen = set()
    for path in sorted(FIXTURES.iterdir()):
        result = read(path.name)
        if "launcher" in result.knobs:
            assert result.knobs["launcher"].value in LAUNCHERS, path.name
            seen.add(result.knobs["launcher"].value)
    assert {"helm", "ray_serve_llm"} <= seen
    assert seen == set(LAUNCHERS), f"declared but never produced by a fixture: {set(LAUNCHERS) - seen}"
