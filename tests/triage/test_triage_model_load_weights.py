"""A traceback cut above the model class's own `load_weights` (vllm/model_executor/models/<arch>.py)
is still weight loading: every architecture defines the method and only the loaders call it."""

from __future__ import annotations

from pathlib import Path

from tests.triage.conftest import TriageJson
from tests.triage.triage_helpers import write_log

W = "(VllmWorker rank=1 pid=20417) ERROR 09-30 16:05:41 [multiproc_executor.py:546]"
SITE = "/opt/venv/lib/python3.12/site-packages"

CUT_TRACEBACK = (
    f'{W}   File "{SITE}/vllm/model_executor/models/deepseek_v2.py", line 902, in load_weights\n'
    f"{W}     param = params_dict[name]\n"
    f"{W}             ~~~~~~~~~~~^^^^^^\n"
    f"{W} KeyError: 'model.layers.3.mlp.experts.w2_weight_scale_inv'\n"
    "ERROR 09-30 16:05:43 [core.py:700] EngineCore failed to start.\n"
)


def test_a_key_error_in_a_models_load_weights_is_weight_load(tmp_path: Path, triage_json: TriageJson) -> None:
    data = triage_json(write_log(tmp_path, CUT_TRACEBACK))
    assert data["phase"] == "weight_load"
    assert data["first_error"]["message"].startswith("KeyError: 'model.layers.3.mlp.experts")


def test_a_function_of_another_directory_is_not_matched(tmp_path: Path, triage_json: TriageJson) -> None:
    """The directory entry is one directory: a `load_weights` of a LoRA module elsewhere in vLLM
    (not a model class) gives no weight-loading verdict from that frame."""
    log = CUT_TRACEBACK.replace("vllm/model_executor/models/deepseek_v2.py", "vllm/lora/punica_wrapper/x.py")
    data = triage_json(write_log(tmp_path, log))
    assert data["phase"] != "weight_load"
    assert "load_weights" not in data["phase_reason"]
