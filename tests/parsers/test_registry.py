"""The parser registry: every format declared once next to its parser, asked by role sniffing
and by the fingerprint combiner; a new format is one module and its registration."""

from __future__ import annotations

import subprocess
import sys

import pytest

from vllm_triage.core.roles import Role
from vllm_triage.parsers.base import ParseResult, clean_paste
from vllm_triage.parsers.registry import BUILTIN_MODULES, REGISTRY, Registry
from vllm_triage.parsers.roles import sniff_text

# `rocm-smi --showproductname`, as the README's "Adding a format" example reads it.
ROCM_SMI = """\
======================= ROCm System Management Interface =======================
================================= Product Info =================================
GPU[0]\t\t: Card series: \t\tInstinct MI210
GPU[0]\t\t: Card vendor: \t\tAdvanced Micro Devices, Inc. [AMD/ATI]
GPU[1]\t\t: Card series: \t\tInstinct MI210
================================================================================
============================= End of ROCm SMI Log ==============================
"""


def _rocm_registry() -> Registry:
    """A registry of its own (the program's stays as it is), holding one toy format under a
    scoped role: the example of the README, registered the way every built-in parser is."""
    registry = Registry()

    def looks_like(text: str) -> bool:
        return "ROCm System Management Interface" in text[:4096]

    @registry.parser(Role.NVIDIA_SMI, looks_like=looks_like, sniff=10, scoped=True)
    def parse(text: str, file: str, scope: str = "gpu") -> ParseResult:
        result = ParseResult(kind="rocm_smi.product")
        names = []
        for line in clean_paste(text):
            head, _, rest = line.text.partition(": Card series:")
            if rest and head.startswith("GPU["):
                names.append(rest.strip())
                if len(names) == 1:
                    result.fact(f"{scope}.gpu_name", rest.strip(), file, line.number)
        if names:
            result.fact(f"{scope}.gpu_count", len(names), file, 3)
        return result

    return registry


def test_a_registered_format_is_sniffed_and_read_with_its_scope() -> None:
    registry = _rocm_registry()
    assert sniff_text(ROCM_SMI, "product.txt", registry) == Role.NVIDIA_SMI
    result = registry[Role.NVIDIA_SMI].read(ROCM_SMI, "product.txt", "host")
    assert result.facts["host.gpu_name"].value == "Instinct MI210"
    assert result.facts["host.gpu_name"].source.line == 3
    assert result.facts["host.gpu_count"].value == 2
    # Without a scope the facts are the `gpu.` view, as for every scoped parser.
    assert "gpu.gpu_count" in registry[Role.NVIDIA_SMI].read(ROCM_SMI, "product.txt", None).facts


def test_the_program_registry_does_not_claim_the_toy_format() -> None:
    # The example lives only in its own registry: the shipped sniffers turn it away.
    assert sniff_text(ROCM_SMI, "product.txt") != Role.NVIDIA_SMI


def test_a_role_is_registered_once() -> None:
    registry = _rocm_registry()
    with pytest.raises(ValueError, match="two parsers registered for role nvidia_smi"):
        registry.parser(Role.NVIDIA_SMI, looks_like=bool, sniff=20)(lambda text, file: ParseResult("x"))


def test_an_unscoped_parser_is_called_without_a_scope() -> None:
    registry = Registry()
    seen: list[tuple[str, str]] = []

    @registry.parser(Role.ENVIRONMENT, looks_like=lambda text: "=" in text, sniff=None)
    def parse(text: str, file: str) -> ParseResult:
        seen.append((text, file))
        return ParseResult(kind="env")

    assert registry[Role.ENVIRONMENT].read("A=1", "env.txt", "host").kind == "env"
    assert seen == [("A=1", "env.txt")]
    assert registry.sniffers() == []  # sniff=None: never asked by sniffing


def test_every_built_in_role_has_one_parser_and_the_sniffing_order_is_total() -> None:
    roles = {f.role for f in REGISTRY.formats()}
    assert roles == set(Role) - {Role.MANIFEST, Role.UNKNOWN}
    orders = [f.sniff for f in REGISTRY.sniffers()]
    assert orders == sorted(orders) and len(set(orders)) == len(orders)
    # A log is found by how many of its lines look like one, never by a sniffer of its own.
    assert REGISTRY[Role.VLLM_LOG].sniff is None
    assert [f.role for f in REGISTRY.formats() if f.scoped] == [Role.NVIDIA_SMI, Role.COLLECT_ENV]


def test_each_role_is_registered_by_the_module_the_registry_names_for_it() -> None:
    # Run in a fresh interpreter: in this one the parsers are all imported already.
    script = (
        "import sys\n"
        "from vllm_triage.parsers.registry import BUILTIN_MODULES, REGISTRY\n"
        "for role, module in BUILTIN_MODULES.items():\n"
        "    assert REGISTRY.get(role).role == role, role\n"
        "    assert module in sys.modules, module\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True)
    assert set(BUILTIN_MODULES) == {f.role for f in REGISTRY.formats()}


def test_reading_a_log_imports_no_other_parser() -> None:
    # The log's reader is one module: triage of a paste does not pay for importing the others.
    script = (
        "import sys\n"
        "from vllm_triage.parsers.registry import REGISTRY\n"
        "assert REGISTRY.get('vllm_log') is not None\n"
        "print(sorted(m for m in sys.modules if m.startswith('vllm_triage.parsers.')))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True)
    assert "vllm_triage.parsers.vllm_log_config" in done.stdout
    assert "vllm_triage.parsers.nvidia_smi" not in done.stdout
    assert "vllm_triage.parsers.container_inspect" not in done.stdout
