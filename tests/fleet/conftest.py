"""One synthetic fleet and one scan of it per session: the scan is the slow part (≈ 4 s on two
cores), every test reads its result."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from fleet_factory import FLEET_SIZE, BundleSpec, make_fleet, write_corrupt_archive


@dataclass
class ScannedFleet:
    root: Path
    out: Path
    specs: list[BundleSpec]
    corrupt: Path
    stats: object  # vllm_triage.fleet.scan.ScanStats

    def by_label(self) -> dict[str, BundleSpec]:
        return {spec.label: spec for spec in self.specs}


@pytest.fixture(scope="session")
def scanned_fleet(tmp_path_factory) -> ScannedFleet:
    from vllm_triage.fleet.scan import scan

    root = tmp_path_factory.mktemp("fleet")
    specs = make_fleet(root, FLEET_SIZE)
    corrupt = write_corrupt_archive(root / "gpu-a01" / "interrupted-copy.tar.gz")
    out = tmp_path_factory.mktemp("fleet-out")
    stats = scan([str(root)], str(out), jobs=2)
    return ScannedFleet(root, out, specs, corrupt, stats)
