"""The formats the fingerprint reads, each declared once next to its parser.

A parser module registers its `parse` with `@parser(Role.X, looks_like=…, sniff=…)`; role sniffing
(parsers/roles.py) asks the registered sniffers in `sniff` order, and the fingerprint combiner
(fingerprint/combine.py) parses a source with the format of its role. `parsers/formats.py` imports
every parser module, so asking for every format (sniffing) loads them all, and only then; asking for
one role imports only its module (`BUILTIN_MODULES`): triage of a log reads it with the log's
parser and never needs the nvidia-smi or inspect readers (≈ 50 ms of imports on a small paste).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

from vllm_triage.core.roles import Role
from vllm_triage.parsers.base import ParseResult

# A parser reads the text of one file, named `file`; a scoped one also says whose view it is
# (`host`, `container`, or `gpu` when nobody said): its facts are named `{scope}.…`.
Parse = Callable[[str, str, str], ParseResult]
LooksLike = Callable[[str], object]  # truthy when the text is this format (nvidia-smi: its sub-kind)


@dataclass(frozen=True)
class Format:
    role: Role
    parse: Parse
    looks_like: LooksLike
    sniff: int | None  # its place among the sniffers (lower asks first); None: never asked
    scoped: bool

    def read(self, text: str, file: str, scope: str | None) -> ParseResult:
        return self.parse(text, file, scope or "gpu")


class Registry:
    """Role → Format. One module-level instance serves the program; a test may make its own."""

    def __init__(
        self, load: Callable[[], object] | None = None, modules: dict[Role, str] | None = None
    ) -> None:
        self._formats: dict[Role, Format] = {}
        self._load = load
        self._modules = dict(modules or {})  # role -> the module that registers it, not imported yet

    def parser(
        self, role: Role, *, looks_like: LooksLike, sniff: int | None, scoped: bool = False
    ) -> Callable[[Callable[..., ParseResult]], Callable[..., ParseResult]]:
        """Register the decorated `parse(text, file[, scope])` as the reader of `role`."""

        def register(parse: Callable[..., ParseResult]) -> Callable[..., ParseResult]:
            if role in self._formats:
                raise ValueError(f"two parsers registered for role {role!s}")
            if scoped:
                reader: Parse = parse
            else:

                def reader(text: str, file: str, _scope: str) -> ParseResult:
                    return parse(text, file)

            self._formats[role] = Format(role, reader, looks_like, sniff, scoped)
            return parse

        return register

    def _loaded(self) -> dict[Role, Format]:
        if self._load is not None:
            load, self._load = self._load, None
            load()
        return self._formats

    def formats(self) -> list[Format]:
        """Every format, the sniffed ones in sniffing order first."""
        return sorted(self._loaded().values(), key=lambda f: (f.sniff is None, f.sniff or 0))

    def sniffers(self) -> list[Format]:
        return [f for f in self.formats() if f.sniff is not None]

    def get(self, role: str) -> Format | None:
        if role not in Role._value2member_map_:
            return None
        key = Role(role)
        if key not in self._formats and self._load is not None:
            module = self._modules.pop(key, None)
            if module is None:
                return self._loaded().get(key)
            importlib.import_module(module)  # registers it (and whatever else that module imports)
        return self._formats.get(key)

    def __getitem__(self, role: str) -> Format:
        found = self.get(role)
        if found is None:
            raise KeyError(role)
        return found


def _load_builtin() -> None:
    from vllm_triage.parsers import formats  # noqa: F401  (importing it registers every parser)


# Which built-in module registers each role (tests/parsers/test_registry.py keeps this true).
BUILTIN_MODULES: dict[Role, str] = {
    Role.NVIDIA_SMI: "vllm_triage.parsers.nvidia_smi",
    Role.COLLECT_ENV: "vllm_triage.parsers.collect_env",
    Role.CONTAINER_INSPECT: "vllm_triage.parsers.container_inspect",
    Role.LAUNCH_COMMAND: "vllm_triage.parsers.launch",
    Role.REQUEST: "vllm_triage.parsers.request",
    Role.ENVIRONMENT: "vllm_triage.parsers.env_file",
    Role.VLLM_LOG: "vllm_triage.parsers.vllm_log_config",
}
REGISTRY = Registry(_load_builtin, BUILTIN_MODULES)
parser = REGISTRY.parser
