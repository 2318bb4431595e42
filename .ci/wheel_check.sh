#!/usr/bin/env bash
# Install as a user does: build the wheel, install it into a fresh environment (pipx when it is
# there, else a new venv), and use it from an empty folder, away from the source tree: the bundled
# samples, rules, report templates, schemas and lnav format must all come from inside the wheel.
# Prints `wheel check: N passed, 0 failed` and exits 0, or names the failed step and exits 1.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
passed=0

step() {  # step NAME COMMAND…: run it, count it, stop at the first failure
  local name="$1"
  shift
  if ! "$@" >"$work/step.out" 2>&1; then
    echo "wheel check: FAILED: $name" >&2
    tail -n 20 "$work/step.out" >&2
    echo "wheel check: $passed passed, 1 failed"
    exit 1
  fi
  passed=$((passed + 1))
}

step "build the wheel" python3 -m pip wheel --no-deps -q "$repo" -w "$work/dist"
wheel="$(ls "$work"/dist/vllm_triage-*.whl)"
if command -v pipx >/dev/null 2>&1; then
  export PIPX_HOME="$work/pipx" PIPX_BIN_DIR="$work/bin"
  step "pipx install the wheel" pipx install "$wheel"
  bin="$work/bin/vllm-triage"
else
  step "create a fresh venv" python3 -m venv "$work/venv"
  step "pip install the wheel" "$work/venv/bin/pip" install -q "$wheel"
  bin="$work/venv/bin/vllm-triage"
fi
mkdir "$work/empty"
cd "$work/empty"

step "the wheel ships py.typed and the LICENSE" \
  python3 -c "import sys, zipfile; names = zipfile.ZipFile(sys.argv[1]).namelist(); \
assert 'vllm_triage/py.typed' in names, 'no py.typed'; \
assert any(n.endswith('licenses/LICENSE') or n.endswith('/LICENSE') for n in names), 'no LICENSE'" "$wheel"
step "--sample lists the samples" bash -c "'$bin' triage --sample | grep -q '^kv-cache-too-small '"
step "triage --sample kv-cache-too-small" \
  bash -c "'$bin' triage --sample kv-cache-too-small | head -n 1 | grep -q '^failed in engine_reserve: '"
step "fingerprint --sample driver-too-old-cu130" \
  bash -c "'$bin' fingerprint --sample driver-too-old-cu130 --format json | python3 -c \
'import json, sys; d = json.load(sys.stdin); assert any(f[\"id\"] == \"driver-too-old-for-cuda\" for f in d[\"findings\"])'"
# The samples' folder inside the installed package, as triage reports it.
sample_dir="$("$bin" triage --sample request-illegal-access --format json \
  | python3 -c 'import json, os, sys; print(os.path.dirname(json.load(sys.stdin)["inputs"][0]["path"]))')"
step "report --format html from the wheel's templates" \
  bash -c "'$bin' report --format html -o report.html '$sample_dir' && grep -q '<svg id=\"timeline\"' report.html"
step "report: the bug form field by field from the wheel's templates" \
  bash -c "'$bin' report '$sample_dir' | grep -q '^## 3. 🐛 Describe the bug — \`--field bug\`' \
&& '$bin' report --field bug '$sample_dir' | grep -q '^\*\*First error\*\*'"
step "schema triage is valid JSON" bash -c "'$bin' schema triage | python3 -m json.tool >/dev/null"
step "lnav-format is valid JSON" bash -c "'$bin' lnav-format | python3 -m json.tool >/dev/null"
step "a usage error is one line and exit 2" \
  bash -c "'$bin' triage --no-such-option 2>err; test \$? -eq 2 && test \$(wc -l <err) -eq 1"
echo "wheel check: $passed passed, 0 failed"
