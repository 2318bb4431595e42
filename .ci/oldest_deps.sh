#!/usr/bin/env bash
# The lower bounds of pyproject.toml, proven: install the oldest allowed version of every
# dependency (.ci/oldest-constraints.txt) into a fresh venv and run the whole suite against it.
# Prints pytest's closing line; exits with pytest's code.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
venv="$(mktemp -d)/venv"
trap 'rm -rf "$(dirname "$venv")"' EXIT
python3 -m venv "$venv"
"$venv/bin/pip" install -q -c "$repo/.ci/oldest-constraints.txt" "$repo[test]"
"$venv/bin/pip" list 2>/dev/null | grep -iE '^(polars|regex|click|jinja2|pyarrow|rapidfuzz|pyyaml) ' | sed 's/^/oldest: /'
cd "$repo"
"$venv/bin/python" -m pytest -q -p no:cacheprovider
