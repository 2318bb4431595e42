"""Start-up: `triage` of a small paste loads only what it needs (no other command's module, no
Python regex it has no line for), and every command is still there when named or listed."""

from __future__ import annotations

import json
import subprocess
import sys

from click.testing import CliRunner

from vllm_triage.cli import cli
from vllm_triage.commands import COMMAND_MODULES

PASTE = """\
INFO 11-04 15:21:05 [__init__.py:241] Automatically detected platform cuda.
(EngineCore_0 pid=250) ERROR 11-04 15:22:10 [core.py:700] EngineCore failed to start.
(EngineCore_0 pid=250) ERROR 11-04 15:22:10 [core.py:700] Traceback (most recent call last):
(EngineCore_0 pid=250) ERROR 11-04 15:22:10 [core.py:700]   File "/usr/lib/python3/vllm/v1/engine/core.py", line 691, in run_engine_core
(EngineCore_0 pid=250) ERROR 11-04 15:22:10 [core.py:700]     engine_core = EngineCoreProc(*args, **kwargs)
(EngineCore_0 pid=250) ERROR 11-04 15:22:10 [core.py:700] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.06 GiB is free.
"""


def test_triage_imports_no_other_command_and_compiles_only_needed_rules(tmp_path) -> None:
    log = tmp_path / "paste.log"
    log.write_text(PASTE, encoding="utf-8")
    probe = f"""
import json, sys
from vllm_triage.cli import main
from vllm_triage.engine import rules
compiled = set()
original = rules.Rule.compiled.fget


def counted(self):
    compiled.add(self.id)
    return original(self)


rules.Rule.compiled = property(counted)
sys.argv = ["vllm-triage", "triage", {str(log)!r}, "--format", "json"]
try:
    main()
except SystemExit:
    pass
loaded = sorted(m for m in sys.modules if m.startswith("vllm_triage.commands.")
                and m not in ("vllm_triage.commands.output", "vllm_triage.commands.run_output",
                              "vllm_triage.commands.runs"))
total = len(rules.load().rules)
print(json.dumps({{"loaded": loaded, "compiled": len(compiled), "total": total}}), file=sys.stderr)
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    report = json.loads(done.stderr.strip().splitlines()[-1])
    result = json.loads(done.stdout)
    assert result["first_error"]["category"], result
    assert report["loaded"] == []
    # A handful of rules hold a literal of this paste; the other ~100 patterns are never compiled.
    assert 0 < report["compiled"] < report["total"] // 4, report


def test_every_command_module_is_listed_and_runs_when_named() -> None:
    runner = CliRunner()
    listing = runner.invoke(cli, ["--help"])
    assert listing.exit_code == 0
    for module in COMMAND_MODULES:
        name = module.rsplit(".", 1)[-1].replace("_", "-")
        assert f"  {name} " in listing.output, name
        shown = runner.invoke(cli, [name, "--help"])
        assert shown.exit_code == 0, (name, shown.output)
        assert "--quiet" in shown.output, name
    assert "--width" in runner.invoke(cli, ["diff", "--help"]).output


def test_an_unknown_command_is_a_usage_error() -> None:
    from vllm_triage.cli import main

    done = subprocess.run(
        [sys.executable, "-c", "from vllm_triage.cli import main; main()", "no-such-command"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "No such command" in done.stderr
    assert main is not None
