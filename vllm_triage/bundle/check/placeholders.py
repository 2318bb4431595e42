"""Template placeholders and elisions left in a paste: the artefact they stand in is missing.

"Your output of `python collect_env.py` here" under the collect_env heading, "<paste here>" where
the log should be, a launch command shortened with "…" — each is text where evidence should be.
The placeholders are data (rules/checklist.toml `[[placeholder]]`); this module finds them, with
the file and line, in every artefact they apply to.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

from vllm_triage.bundle.check.data import ChecklistData
from vllm_triage.bundle.trials import Trial
from vllm_triage.core.provenance import Provenance
from vllm_triage.core.roles import Role

# Roles whose lines starting with `#` are comments (a comment may say anything, even "…").
_COMMENTED_ROLES = (Role.LAUNCH_COMMAND, Role.ENVIRONMENT, Role.REQUEST)
# A file nothing recognised (a placeholder is no artefact) is placed by its name.
_NAME_HINTS = (
    ("collect_env", Role.COLLECT_ENV),
    ("collect-env", Role.COLLECT_ENV),
    ("nvidia", Role.NVIDIA_SMI),
    ("inspect", Role.CONTAINER_INSPECT),
    ("command", Role.LAUNCH_COMMAND),
    ("launch", Role.LAUNCH_COMMAND),
    ("compose", Role.LAUNCH_COMMAND),
    ("request", Role.REQUEST),
    ("curl", Role.REQUEST),
    ("env", Role.ENVIRONMENT),
    ("log", Role.VLLM_LOG),
)
MAX_LINE_SHOWN = 160


@dataclass(frozen=True)
class PlaceholderHit:
    placeholder: str
    explain: str
    role: str
    file: str
    line: int
    text: str

    @property
    def where(self) -> Provenance:
        return Provenance(self.file, self.line)

    def to_json(self) -> dict:
        return {
            "placeholder": self.placeholder,
            "role": self.role,
            "file": self.file,
            "line": self.line,
            "text": self.text,
        }


def role_for(name: str, role: str | None) -> str:
    """The role a placeholder file stands in for: its sniffed role, else what its name says."""
    if role not in (None, Role.UNKNOWN):
        return str(role)
    base = PurePosixPath(name.replace("!", "/")).name.lower()
    return next((hinted for word, hinted in _NAME_HINTS if word in base), "unknown")


def find_placeholders(trial: Trial, data: ChecklistData) -> list[PlaceholderHit]:
    """The placeholder lines of a trial, found once: `report` asks for them twice (its checklist
    and its file list)."""
    if trial._placeholder_hits is None:
        trial._placeholder_hits = _find_placeholders(trial, data)
    return list(trial._placeholder_hits)


def _find_placeholders(trial: Trial, data: ChecklistData) -> list[PlaceholderHit]:
    hits: list[PlaceholderHit] = []
    for source in trial.sources:
        if source.role == Role.MANIFEST:
            continue
        role = role_for(source.name, source.role)
        text = trial.text(source)
        chosen = [p for p in data.placeholders if p.applies_to(role) and p.anywhere(text)]
        if not chosen:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if role in _COMMENTED_ROLES and line.lstrip().startswith("#"):
                continue
            for placeholder in chosen:
                if placeholder.search(line):
                    shown = line.strip()
                    if len(shown) > MAX_LINE_SHOWN:
                        shown = shown[: MAX_LINE_SHOWN - 1] + "…"
                    hits.append(
                        PlaceholderHit(placeholder.id, placeholder.explain, role, source.name, number, shown)
                    )
                    break  # one hit per line is enough evidence
    return hits
