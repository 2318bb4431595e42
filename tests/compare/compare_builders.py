"""Bundles written from parameters, for the diff and series tests: a V1 vLLM server log (with a
chosen failure, requests and stats lines), the host's nvidia-smi, a docker container inspect, a
bundle.toml, and optionally a request script and an inherited environment dump.

Each bundle is what a person would collect after one trial; the tests change one parameter (or
several) between two of them, exactly as a person changes one knob between two trials.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

_TS = "10-14 07:02:11"


@dataclass
class Trial:
    label: str = "t1"
    node: str | None = "gpu-node-a"
    started: str | None = "2026-03-01T10:00:00Z"
    version: str = "0.10.2"
    image: str = "vllm/vllm-openai:v0.10.2"
    image_id: str = "sha256:" + "a1" * 32
    image_cuda: str = "12.8.1"
    driver: str = "570.133.20"
    smi_cuda: str = "12.8"
    gpu_model: str = "NVIDIA H100 80GB HBM3"
    used_mib: tuple[int, ...] = (1, 1)
    processes: tuple[tuple[int, int, int], ...] = ()  # (gpu, pid, MiB)
    host_smi: bool = True
    container_id: str = "c0ffee" * 10 + "abcd"
    container_name: str = "vllm-trial"
    model: str = "Qwen/Qwen2.5-7B-Instruct"
    args: dict[str, Any] = field(default_factory=lambda: {"max_model_len": 8192, "port": 8000})
    prefix_caching: bool = False  # the engine banner's effective value
    env: dict[str, str] = field(default_factory=dict)  # set with docker run -e
    inherited: dict[str, str] = field(default_factory=dict)  # only in printenv of the shell
    failure: str | None = None  # oom | driver | illegal | None
    requests: int = 0  # answered requests in the access log
    running: tuple[int, ...] = ()  # "Running: N reqs" of each stats line
    hit_rates: tuple[float, ...] = ()  # "Prefix cache hit rate" of each stats line
    concurrency: int | None = None  # a request script with xargs -P N
    oom_bytes: str = "2.31 GiB"
    pid: int = 157

    def but(self, **changes: Any) -> Trial:
        return replace(self, **changes)


def _prefix(process: str, level: str = "INFO", where: str = "core.py:76") -> str:
    return f"({process}) {level} {_TS} [{where}]"


def vllm_log(t: Trial) -> str:
    api = "APIServer pid=1"
    eng = f"EngineCore_DP0 pid={t.pid}"
    non_default = {"model_tag": t.model, "host": "0.0.0.0", "model": t.model}
    non_default.update({k: v for k, v in t.args.items() if k != "port"})
    if "port" in t.args and t.args["port"] != 8000:
        non_default["port"] = t.args["port"]
    tp = t.args.get("tensor_parallel_size", 1)
    lines = [
        f"INFO {_TS} [__init__.py:216] Automatically detected platform cuda.",
        f"{_prefix(api, where='api_server.py:1896')} vLLM API server version {t.version}",
        f"{_prefix(api, where='utils.py:328')} non-default args: {non_default!r}",
        f"{_prefix(api, where='__init__.py:742')} Resolved architecture: Qwen2ForCausalLM",
        f"{_prefix(api, where='__init__.py:1815')} Using max model len {t.args.get('max_model_len', 32768)}",
        f"{_prefix(eng, where='core.py:654')} Waiting for init message from front-end.",
        f"{_prefix(eng)} Initializing a V1 LLM engine (v{t.version}) with config: model='{t.model}', "
        f"speculative_config=None, tokenizer='{t.model}', skip_tokenizer_init=False, tokenizer_mode=auto, "
        f"revision=None, trust_remote_code=False, dtype=torch.bfloat16, "
        f"max_seq_len={t.args.get('max_model_len', 32768)}, download_dir=None, load_format=auto, "
        f"tensor_parallel_size={tp}, pipeline_parallel_size=1, data_parallel_size=1, "
        f"disable_custom_all_reduce=False, quantization=None, enforce_eager=False, kv_cache_dtype=auto, "
        f"device_config=cuda, seed=0, served_model_name={t.model}, enable_prefix_caching={t.prefix_caching}, "
        f"chunked_prefill_enabled=True",
    ]
    if t.failure == "driver":
        lines += _traceback(
            eng,
            [
                (
                    "vllm/v1/engine/core.py",
                    570,
                    "run_engine_core",
                    "engine_core = EngineCoreProc(*args, **kwargs)",
                ),
                ("vllm/v1/worker/gpu_worker.py", 160, "init_device", "torch.cuda.set_device(self.device)"),
                ("torch/cuda/__init__.py", 372, "_lazy_init", "torch._C._cuda_init()"),
            ],
            "RuntimeError: The NVIDIA driver on your system is too old (found version 12040). Please update your "
            "GPU driver by downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx",
        )
        return "\n".join(lines) + "\n"
    lines += [
        f"{_prefix(eng, where='parallel_state.py:1165')} rank 0 in world size {tp} is assigned as DP rank 0, PP rank 0, TP rank 0, EP rank 0",
        f"{_prefix(eng, where='gpu_model_runner.py:2338')} Starting to load model {t.model}...",
        f"{_prefix(eng, where='cuda.py:362')} Using Flash Attention backend on V1 engine.",
        f"{_prefix(eng, where='default_loader.py:268')} Loading weights took 4.51 seconds",
        f"{_prefix(eng, where='gpu_model_runner.py:2392')} Model loading took 14.2487 GiB and 5.346811 seconds",
        f"{_prefix(eng, where='backends.py:539')} Using cache directory: /root/.cache/vllm/torch_compile_cache/61a0f7c2d3/rank_0_0/backbone for vLLM's torch.compile",
        f"{_prefix(eng, where='monitor.py:34')} torch.compile takes 32.59 s in total",
    ]
    if t.failure == "oom":
        lines += _traceback(
            eng,
            [
                (
                    "vllm/v1/worker/gpu_worker.py",
                    263,
                    "determine_available_memory",
                    "self.model_runner.profile_run()",
                ),
                (
                    "vllm/v1/worker/gpu_model_runner.py",
                    3017,
                    "profile_run",
                    "= self._dummy_run(self.max_num_tokens, is_profile=True)",
                ),
                (
                    "vllm/model_executor/layers/activation.py",
                    84,
                    "forward_cuda",
                    "out = torch.empty(output_shape, dtype=x.dtype, device=x.device)",
                ),
            ],
            f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {t.oom_bytes}. GPU 0 has a total capacity "
            f"of 79.19 GiB of which 1.62 GiB is free. Process {t.pid} has 77.5 GiB memory in use.",
            level="ERROR",
            where="core.py:718",
        )
        return "\n".join(lines) + "\n"
    lines += [
        f"{_prefix(eng, where='gpu_worker.py:298')} Available KV cache memory: 52.44 GiB",
        f"{_prefix(eng, where='kv_cache_utils.py:1087')} GPU KV cache size: 981,888 tokens",
        f"{_prefix(eng, where='gpu_model_runner.py:3480')} Graph capturing finished in 7 secs, took 0.49 GiB",
        f"{_prefix(eng, where='core.py:210')} init engine (profile, create kv cache, warmup model) took 25.01 seconds",
        f"{_prefix(api, where='api_server.py:1912')} Starting vLLM API server 0 on http://0.0.0.0:{t.args.get('port', 8000)}",
        f"({api}) INFO:     Started server process [1]",
        f"({api}) INFO:     Waiting for application startup.",
        f"({api}) INFO:     Application startup complete.",
    ]
    stats = max(len(t.running), len(t.hit_rates))
    for i in range(max(t.requests, stats)):
        if i < t.requests:
            lines.append(
                f'({api}) INFO:     172.17.0.1:{50330 + i} - "POST /v1/chat/completions HTTP/1.1" 200 OK'
            )
        if i < stats:
            running = t.running[i] if i < len(t.running) else 1
            line = (
                f"{_prefix(api, where='loggers.py:127')} Engine 000: Avg prompt throughput: 42.1 tokens/s, "
                f"Avg generation throughput: 88.9 tokens/s, Running: {running} reqs, Waiting: 0 reqs, "
                f"GPU KV cache usage: 0.4%"
            )
            if i < len(t.hit_rates):
                line += f", Prefix cache hit rate: {t.hit_rates[i]:.1f}%"
            lines.append(line)
    if t.failure == "illegal":
        worker = "VllmWorker TP0 pid=279"
        lines += _traceback(
            worker,
            [
                (
                    "vllm/v1/executor/multiproc_executor.py",
                    591,
                    "worker_busy_loop",
                    "output = func(*args, **kwargs)",
                ),
                (
                    "vllm/v1/worker/gpu_worker.py",
                    362,
                    "execute_model",
                    "output = self.model_runner.execute_model(scheduler_output)",
                ),
            ],
            "RuntimeError: CUDA error: an illegal memory access was encountered",
            level="ERROR",
            where="multiproc_executor.py:596",
            headline="WorkerProc hit an exception.",
        )
    return "\n".join(lines) + "\n"


def _traceback(
    process: str,
    frames: list[tuple[str, int, str, str]],
    exception: str,
    level: str = "ERROR",
    where: str = "core.py:718",
    headline: str = "EngineCore failed to start.",
) -> list[str]:
    head = f"({process}) {level} {_TS} [{where}]"
    out = [f"{head} {headline}", f"{head} Traceback (most recent call last):"]
    for file, line, func, code in frames:
        out.append(f'{head}   File "/usr/local/lib/python3.12/dist-packages/{file}", line {line}, in {func}')
        out.append(f"{head}     {code}")
    out.append(f"{head} {exception}")
    return out


def nvidia_smi(t: Trial) -> str:
    lines = [
        "Thu Mar  1 09:59:02 2026       ",
        "+-----------------------------------------------------------------------------------------+",
        f"| NVIDIA-SMI {t.driver:<22} Driver Version: {t.driver:<14} CUDA Version: {t.smi_cuda:<8} |",
        "|-----------------------------------------+------------------------+----------------------+",
        "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |",
        "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |",
        "|                                         |                        |               MIG M. |",
        "|=========================================+========================+======================|",
    ]
    for gpu, used in enumerate(t.used_mib):
        lines += [
            f"|   {gpu}  {t.gpu_model:<26}     On  |   00000000:{18 + gpu:02X}:00.0 Off |                    0 |",
            f"| N/A   33C    P0             69W /  700W |   {used:>5}MiB /  81559MiB |      0%      Default |",
            "|                                         |                        |             Disabled |",
            "+-----------------------------------------+------------------------+----------------------+",
        ]
    lines += [
        "                                                                                         ",
        "+-----------------------------------------------------------------------------------------+",
        "| Processes:                                                                              |",
        "|  GPU   GI   CI              PID   Type   Process name                        GPU Memory |",
        "|        ID   ID                                                               Usage      |",
        "|=========================================================================================|",
    ]
    if not t.processes:
        lines.append(
            "|  No running processes found                                                             |"
        )
    for gpu, pid, mib in t.processes:
        lines.append(
            f"|    {gpu}   N/A  N/A          {pid:>7}      C   /usr/bin/python3                      {mib:>6}MiB |"
        )
    lines.append(
        "+-----------------------------------------------------------------------------------------+"
    )
    return "\n".join(lines) + "\n"


def inspect_json(t: Trial) -> str:
    cmd = [t.model]
    for key, value in t.args.items():
        flag = "--" + key.replace("_", "-")
        if value is True:
            cmd.append(flag)
        elif value is False:
            cmd.append("--no-" + key.replace("_", "-"))
        else:
            cmd += [flag, str(value)]
    env = [f"{k}={v}" for k, v in t.env.items()] + [
        "PATH=/usr/local/nvidia/bin:/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "NVARCH=x86_64",
        f"CUDA_VERSION={t.image_cuda}",
        f"NVIDIA_REQUIRE_CUDA=cuda>={'.'.join(t.image_cuda.split('.')[:2])} brand=tesla,driver>=535,driver<536",
        "NVIDIA_VISIBLE_DEVICES=all",
        "VLLM_USAGE_SOURCE=production-docker-image",
    ]
    record = {
        "Id": t.container_id,
        "Created": "2026-03-01T10:00:00.118402917Z",
        "Path": "vllm",
        "Args": ["serve", *cmd],
        "State": {
            "Status": "running",
            "Running": True,
            "OOMKilled": False,
            "Pid": 4242,
            "ExitCode": 0,
            "StartedAt": "2026-03-01T10:00:00.694018331Z",
            "FinishedAt": "0001-01-01T00:00:00Z",
        },
        "Image": t.image_id,
        "Name": "/" + t.container_name,
        "HostConfig": {
            "NetworkMode": "host",
            "IpcMode": "host",
            "Privileged": False,
            "ShmSize": 17179869184,
            "Runtime": "runc",
            "DeviceRequests": [
                {"Driver": "", "Count": -1, "DeviceIDs": None, "Capabilities": [["gpu"]], "Options": {}}
            ],
        },
        "Config": {
            "Hostname": t.container_id[:12],
            "Env": env,
            "Cmd": cmd,
            "Image": t.image,
            "Entrypoint": ["vllm", "serve"],
        },
    }
    return json.dumps([record], indent=4) + "\n"


def request_script(t: Trial) -> str:
    body = json.dumps(
        {"model": t.model, "messages": [{"role": "user", "content": "Say hello."}], "max_tokens": 32}
    )
    if t.concurrency:
        return (
            f"seq 1 {t.concurrency * 4} | xargs -P {t.concurrency} -I{{}} curl -s "
            f"http://localhost:8000/v1/chat/completions -H 'Content-Type: application/json' -d '{body}'\n"
        )
    return (
        f"curl -s http://localhost:8000/v1/chat/completions -H 'Content-Type: application/json' -d '{body}'\n"
    )


def write_bundle(root: Path, t: Trial) -> Path:
    """Write the bundle of trial `t` under root/<label>/ and return its folder."""
    folder = root / t.label
    folder.mkdir(parents=True, exist_ok=True)
    manifest = ["[run]", f'label = "{t.label}"']
    if t.node:
        manifest.append(f'node = "{t.node}"')
    if t.started:
        manifest.append(f'started = "{t.started}"')
    files = [("vllm.log", "vllm_log"), ("inspect.json", "container_inspect")]
    (folder / "vllm.log").write_text(vllm_log(t))
    (folder / "inspect.json").write_text(inspect_json(t))
    if t.host_smi:
        (folder / "nvidia-smi-host.txt").write_text(nvidia_smi(t))
        files.append(("nvidia-smi-host.txt", "nvidia_smi.host"))
    if t.requests or t.concurrency:
        (folder / "request.sh").write_text(request_script(t))
        files.append(("request.sh", "request"))
    if t.inherited:
        (folder / "printenv.txt").write_text(
            "".join(f"{k}={v}\n" for k, v in {**t.inherited, "HOME": "/root"}.items())
        )
        files.append(("printenv.txt", "environment"))
    for path, role in files:
        manifest += ["", "[[file]]", f'path = "{path}"', f'role = "{role}"']
    (folder / "bundle.toml").write_text("\n".join(manifest) + "\n")
    return folder
