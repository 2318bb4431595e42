"""Reading the TOML data families under rules/ (and --rules directories) the same strict way:
one error naming the file for unreadable or invalid TOML, for a table that is not an array of
tables, and for missing or unknown fields."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import tomllib

from vllm_triage.core.errors import RuleError

# name -> (required fields, optional fields)
Schema = Mapping[str, tuple[set[str], set[str]]]


def fail(file: str, message: str) -> RuleError:
    return RuleError(f"{file}: {message}")


def read_toml(path: Path) -> dict[str, Any]:
    name = str(path)
    try:
        from vllm_triage.core.cache import load_toml  # parsed once per file version, kept on disk

        return load_toml(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise fail(name, f"cannot read ({exc})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise fail(name, f"is not valid TOML ({exc})") from exc


def check_keys(table: Any, name: str, file: str, schema: Schema) -> dict[str, Any]:
    if not isinstance(table, dict):
        raise fail(file, f"[[{name}]] must be a table")
    required, optional = schema[name]
    label = table.get("id") or table.get("name") or ""
    missing = required - set(table)
    if missing:
        raise fail(file, f"[[{name}]] {label} misses {', '.join(sorted(missing))}".replace("  ", " "))
    unknown = set(table) - required - optional
    if unknown:
        raise fail(
            file, f"[[{name}]] {label}: unknown field(s) {', '.join(sorted(unknown))}".replace("  ", " ")
        )
    return table


def array_tables(document: dict[str, Any], schema: Schema, file: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(table name, checked table) for every `[[name]]` of the schema in the document."""
    for table_name in schema:
        entries = document.get(table_name, [])
        if not isinstance(entries, list):
            raise fail(file, f"{table_name} must be an array of tables ([[{table_name}]])")
        for entry in entries:
            yield table_name, check_keys(entry, table_name, file, schema)


def with_extra_dirs(builtin: Path, extra_dirs: list[str] | None) -> tuple[str, ...]:
    dirs = [builtin]
    for extra in extra_dirs or []:
        path = Path(extra)
        if not path.is_dir():
            raise RuleError(f"--rules {extra}: not a directory")
        dirs.append(path)
    return tuple(str(d) for d in dirs)


# The rule families (engine rules, redaction rules) name the rule in every error, so a user with
# hundreds of tables under --rules is told which one; these three are the checks every family makes.
def rule_fail(file: str, noun: str, rule_id: str | None, message: str) -> RuleError:
    where = f"{file}: {noun} {rule_id}" if rule_id else file
    return RuleError(f"{where}: {message}")


def rule_id(table: Mapping[str, Any], file: str, noun: str, known: set[str], what: str) -> str:
    """The table's id, after refusing a table without one or with a field no reader would use (a
    typo such as `must_mach` would otherwise silently drop its examples)."""
    value = table.get("id")
    if not isinstance(value, str) or not value:
        raise rule_fail(file, noun, None, f"{what} has no id")
    unknown = set(table) - known
    if unknown:
        raise rule_fail(file, noun, value, f"unknown field(s) {', '.join(sorted(unknown))}")
    return value


def string_list(table: Mapping[str, Any], key: str, file: str, noun: str, rule_id: str | None) -> list[str]:
    """A list-of-strings field; a bare string would otherwise be read as a list of characters."""
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise rule_fail(file, noun, rule_id, f"'{key}' must be a list of strings")
    return list(value)
