#!/usr/bin/env bash
# The lower bounds of pyproject.toml, proven: install the oldest allowed version of every runtime
# dependency (.ci/oldest-constraints.txt) into a fresh venv and run the whole suite against it.
# Prints the versions installed and pytest's closing line; exits with pytest's code.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# mktemp makes the folder 0700: the hostile-input tests run the CLI as an unprivileged user
# (setpriv), who must be able to reach this venv's interpreter and packages.
chmod 755 "$work"
venv="$work/venv"
python3 -m venv "$venv"
"$venv/bin/pip" install -q -c "$repo/.ci/oldest-constraints.txt" "$repo[test]"
# Each constraint must be what was installed: a constraint pip could not honour fails here, not later.
while IFS='=' read -r name _ version; do
  [[ -z "$name" || "$name" == \#* ]] && continue
  installed="$("$venv/bin/python" -c "import importlib.metadata as m, sys; print(m.version(sys.argv[1]))" "$name")"
  [[ "$installed" == "$version" ]] || { echo "oldest: $name $installed installed, $version wanted" >&2; exit 1; }
  echo "oldest: $name $installed"
done < "$repo/.ci/oldest-constraints.txt"
cd "$repo"
"$venv/bin/python" -m pytest -q -p no:cacheprovider
