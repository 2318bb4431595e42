"""Bundles written from parameters for the checklist and report tests: a V1 vLLM server log (with a
chosen failure), the launch command, the environment, the request, nvidia-smi from the host and the
container (table, -L, topo -m), a docker inspect, collect_env, and a bundle.toml.

`Bundle()` is complete: every checklist item passes on it. Each test changes one field to make one
item fail or go missing, the way a person forgets one thing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

DIGEST = "sha256:" + "5e" * 32
IMAGE_ID = "sha256:" + "1d" * 32
HF_TOKEN = "hf_Zx9QwErTyUiOpAsDfGhJkLzXcVbNm12345"


@dataclass
class Bundle:
    label: str = "qwen-7b base"
    node: str | None = "gpu-node-7"
    started: str | None = "2026-04-01T09:00:00Z"
    rollback: str | None = None
    version: str = "0.10.2"
    collect_env_version: str | None = None  # collect_env's vLLM version; None: no collect_env file
    collect_env_placeholder: bool = False  # collect_env.txt holds the issue template's placeholder
    model: str = "Qwen/Qwen2.5-7B-Instruct"
    revision: str | None = "a09a35458c702b33eeacc393d103063234e8bc28"
    tp: int = 2
    max_model_len: int = 8192
    prefix_caching: bool = False
    load_format: str = "auto"
    gpu_memory_utilization: float | None = 0.85
    failure: str | None = None  # None | oom | nccl | weights | hang | illegal | consequence_only
    timestamps: bool = True  # vLLM's own timestamps on every log line
    from_start: bool = True  # False: only the last lines of the log were kept
    log_elision: bool = False  # a "[... lines omitted ...]" line before the failure
    nccl_info: bool = False  # NCCL_DEBUG=INFO output in the log
    requests: int = 1  # requests answered (a healthy server)
    log: bool = True
    # The launch command
    command: str | None = "docker"  # docker | vllm_serve | None
    command_elided: bool = False
    command_cut: bool = False
    command_args: dict[str, Any] | None = None  # arguments that differ from the log's (retyped command)
    image_digest: bool = True  # the command names image@sha256
    # Captures
    env_file: bool = True
    env: dict[str, str] = field(default_factory=lambda: {"NCCL_DEBUG": "WARN", "VLLM_LOGGING_LEVEL": "INFO"})
    request: str | None = "curl"  # curl | json | None
    request_timeout: bool = True
    concurrency: int | None = None
    smi_host: bool = True
    smi_container: bool = True
    smi_unscoped: bool = False  # one nvidia-smi.txt with no host/container in its name or manifest
    smi_list: bool = True  # nvidia-smi -L inside the container
    list_gpus: int | None = None  # GPUs nvidia-smi -L lists (default: tp)
    topo: bool = True
    used_mib: tuple[int, ...] = (3, 3)
    inspect: bool = True
    ipc: str | None = "host"
    extra_files: dict[str, str] = field(default_factory=dict)  # name → text (roles sniffed)

    def but(self, **changes: Any) -> Bundle:
        return replace(self, **changes)


_TS = "04-01 09:00:{:02d}"


def _line(process: str, level: str, where: str, text: str, second: int, stamped: bool = True) -> str:
    stamp = f" {_TS.format(second % 60)}" if stamped else ""
    return f"({process}) {level}{stamp} [{where}] {text}"


def _non_default(b: Bundle) -> dict[str, Any]:
    args: dict[str, Any] = {
        "model_tag": b.model,
        "model": b.model,
        "max_model_len": b.max_model_len,
        "tensor_parallel_size": b.tp,
    }
    if b.revision:
        args["revision"] = b.revision
    if b.gpu_memory_utilization is not None:
        args["gpu_memory_utilization"] = b.gpu_memory_utilization
    if b.prefix_caching:
        args["enable_prefix_caching"] = True
    else:
        args["enable_prefix_caching"] = False
    return args


def vllm_log(b: Bundle) -> str:
    api, eng, wrk = "APIServer pid=1", "EngineCore_DP0 pid=120", "Worker_TP0 pid=215"
    t = b.timestamps
    head = [
        f"INFO {_TS.format(0)} [__init__.py:216] Automatically detected platform cuda.",
        _line(api, "INFO", "api_server.py:1896", f"vLLM API server version {b.version}", 1),
        _line(api, "INFO", "utils.py:328", f"non-default args: {_non_default(b)!r}", 1),
        _line(api, "INFO", "__init__.py:742", "Resolved architecture: Qwen2ForCausalLM", 2),
        _line(
            eng,
            "INFO",
            "core.py:74",
            f"Initializing a V1 LLM engine (v{b.version}) with config: model='{b.model}', "
            f"speculative_config=None, tokenizer='{b.model}', skip_tokenizer_init=False, tokenizer_mode=auto, "
            f"revision={b.revision}, trust_remote_code=False, dtype=torch.bfloat16, max_seq_len={b.max_model_len}, "
            f"download_dir=None, load_format={b.load_format}, tensor_parallel_size={b.tp}, pipeline_parallel_size=1, "
            f"data_parallel_size=1, disable_custom_all_reduce=False, quantization=None, enforce_eager=False, "
            f"kv_cache_dtype=auto, device_config=cuda, seed=0, served_model_name={b.model}, "
            f"enable_prefix_caching={b.prefix_caching}, chunked_prefill_enabled=True",
            3,
        ),
        _line(
            wrk,
            "INFO",
            "parallel_state.py:1165",
            f"rank 0 in world size {b.tp} is assigned as DP rank 0, PP rank 0, TP rank 0, EP rank 0",
            5,
        ),
        _line(wrk, "INFO", "pynccl.py:70", "vLLM is using nccl==2.27.3", 5),
    ]
    body: list[str] = []
    if b.nccl_info:
        body += [
            "gpu-node-7:215:215 [0] NCCL INFO Bootstrap : Using eth0:10.1.2.3<0>",
            "gpu-node-7:215:215 [0] NCCL INFO NET/Plugin: No plugin found (libnccl-net.so)",
        ]
    if b.log_elision:
        body.append("[... 240 lines omitted ...]")
    if b.failure == "nccl":
        body += _traceback(
            wrk,
            t,
            [
                (
                    "vllm/v1/worker/gpu_worker.py",
                    164,
                    "init_device",
                    "init_worker_distributed_environment(self.vllm_config)",
                ),
                (
                    "vllm/distributed/device_communicators/pynccl_wrapper.py",
                    256,
                    "NCCL_CHECK",
                    'raise RuntimeError(f"NCCL error: {error_str}")',
                ),
            ],
            "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)",
            "WorkerProc failed to start.",
            "multiproc_executor.py:585",
            6,
        )
        return _join(head, body, b)
    body += [
        _line(wrk, "INFO", "gpu_model_runner.py:2338", f"Starting to load model {b.model}...", 6),
        _line(wrk, "INFO", "cuda.py:362", "Using Flash Attention backend on V1 engine.", 6),
    ]
    if b.failure == "hang":  # the log stops while the weights load: no error line at all
        return _join(head, body, b)
    if b.failure == "weights":
        body += _traceback(
            wrk,
            t,
            [
                (
                    "vllm/model_executor/model_loader/default_loader.py",
                    268,
                    "load_weights",
                    "loaded = model.load_weights(self.get_all_weights(model_config, model))",
                ),
                (
                    "vllm/model_executor/model_loader/weight_utils.py",
                    480,
                    "safetensors_weights_iterator",
                    'with safe_open(st_file, framework="pt") as f:',
                ),
            ],
            "safetensors_rust.SafetensorError: Error while deserializing header: HeaderTooLarge",
            "WorkerProc failed to start.",
            "multiproc_executor.py:585",
            9,
        )
        return _join(head, body, b)
    body += [
        _line(wrk, "INFO", "default_loader.py:268", "Loading weights took 4.51 seconds", 10),
        _line(
            wrk, "INFO", "gpu_model_runner.py:2392", "Model loading took 14.2487 GiB and 5.346811 seconds", 11
        ),
        _line(
            wrk,
            "INFO",
            "backends.py:539",
            "Using cache directory: /root/.cache/vllm/torch_compile_cache/61a0f7c2d3/rank_0_0/backbone for vLLM's torch.compile",
            12,
        ),
    ]
    if b.failure == "oom":
        body += _traceback(
            eng,
            t,
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
            ],
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.31 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.62 GiB is free.",
            "EngineCore failed to start.",
            "core.py:718",
            20,
        )
        return _join(head, body, b)
    body += [
        _line(wrk, "INFO", "gpu_worker.py:298", "Available KV cache memory: 52.44 GiB", 21),
        _line(eng, "INFO", "kv_cache_utils.py:1087", "GPU KV cache size: 981,888 tokens", 21),
        _line(
            wrk, "INFO", "gpu_model_runner.py:3480", "Graph capturing finished in 7 secs, took 0.49 GiB", 29
        ),
        _line(
            eng,
            "INFO",
            "core.py:210",
            "init engine (profile, create kv cache, warmup model) took 25.01 seconds",
            30,
        ),
        _line(api, "INFO", "api_server.py:1912", "Starting vLLM API server 0 on http://0.0.0.0:8000", 31),
        f"({api}) INFO:     Started server process [1]",
        f"({api}) INFO:     Waiting for application startup.",
        f"({api}) INFO:     Application startup complete.",
    ]
    body += [
        f'({api}) INFO:     172.17.0.1:{50330 + i} - "POST /v1/chat/completions HTTP/1.1" 200 OK'
        for i in range(b.requests)
    ]
    if b.failure == "illegal":
        body += _traceback(
            "Worker_TP1 pid=216",
            t,
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
            "WorkerProc hit an exception.",
            "multiproc_executor.py:596",
            40,
        )
        body.append(
            _line(
                api,
                "ERROR",
                "async_llm.py:525",
                "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.",
                41,
            )
        )
    if b.failure == "consequence_only":
        body = [
            _line(api, "ERROR", "async_llm.py:525", "AsyncLLM output_handler failed.", 41),
            _line(
                api,
                "ERROR",
                "async_llm.py:525",
                "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.",
                41,
            ),
        ]
        return "\n".join(body) + "\n"
    return _join(head, body, b)


def _join(head: list[str], body: list[str], b: Bundle) -> str:
    lines = head + body if b.from_start else body
    return "\n".join(lines) + "\n"


def _traceback(
    process: str,
    stamped: bool,
    frames: list[tuple[str, int, str, str]],
    exception: str,
    headline: str,
    where: str,
    second: int,
) -> list[str]:
    if not stamped:  # a bare Python traceback, as printed by a process without vLLM's logger
        out = [f"({process}) {headline}", f"({process}) Traceback (most recent call last):"]
        for file, line, func, code in frames:
            out += [
                f'({process})   File "/usr/local/lib/python3.12/dist-packages/{file}", line {line}, in {func}',
                f"({process})     {code}",
            ]
        return out + [f"({process}) {exception}"]
    head = f"({process}) ERROR {_TS.format(second % 60)} [{where}]"
    out = [f"{head} {headline}", f"{head} Traceback (most recent call last):"]
    for file, line, func, code in frames:
        out += [
            f'{head}   File "/usr/local/lib/python3.12/dist-packages/{file}", line {line}, in {func}',
            f"{head}     {code}",
        ]
    return out + [f"{head} {exception}"]


def _image(b: Bundle) -> str:
    ref = f"vllm/vllm-openai:v{b.version}"
    return f"vllm/vllm-openai@{DIGEST}" if b.image_digest else ref


def command(b: Bundle) -> str:
    args = dict(_non_default(b))
    args.pop("model_tag")
    model = args.pop("model")
    args.update(b.command_args or {})
    words = []
    for key, value in args.items():
        flag = "--" + key.replace("_", "-")
        if value is True:
            words.append(flag)
        elif value is False:
            words.append("--no-" + key.replace("_", "-"))
        else:
            words.append(f"{flag} {value}")
    if b.command == "vllm_serve":
        lines = (
            ["#!/usr/bin/env bash", f"exec vllm serve {model} \\"]
            + [f"  {w} \\" for w in words[:-1]]
            + [f"  {words[-1]}"]
        )
    else:
        env = [f"  -e {k}={v} \\" for k, v in b.env.items()]
        lines = [
            "docker run -d --name vllm-qwen --gpus all \\",
            f"  --ipc={b.ipc} \\" if b.ipc else "  --shm-size=64m \\",
            "  -p 8000:8000 \\",
            *env,
            f"  {_image(b)} \\",
            f"  --model {model} \\",
        ]
        lines += [f"  {w} \\" for w in words[:-1]] + [f"  {words[-1]}"]
    if b.command_elided:
        lines.insert(2, "  … \\")
    if b.command_cut:
        lines[-1] = lines[-1] + " \\"
    return "\n".join(lines) + "\n"


def request(b: Bundle) -> str:
    body = {
        "model": b.model,
        "messages": [{"role": "user", "content": "Say hello in one word."}],
        "max_tokens": 32,
        "temperature": 0.0,
        "top_p": 1.0,
    }
    if b.request == "json":
        return json.dumps(body, indent=2) + "\n"
    timeout = "-m 120 " if b.request_timeout else ""
    curl = f"curl -sS {timeout}http://localhost:8000/v1/chat/completions -H 'Content-Type: application/json' -d '{json.dumps(body)}'"
    if b.concurrency:
        return f"seq 1 {b.concurrency * 4} | xargs -P {b.concurrency} -I{{}} {curl}\n"
    return curl + "\n"


def nvidia_smi(b: Bundle, gpus: int) -> str:
    lines = [
        "Wed Apr  1 08:59:02 2026",
        "+-----------------------------------------------------------------------------------------+",
        "| NVIDIA-SMI 570.133.20             Driver Version: 570.133.20     CUDA Version: 12.8     |",
        "|-----------------------------------------+------------------------+----------------------+",
        "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |",
        "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |",
        "|                                         |                        |               MIG M. |",
        "|=========================================+========================+======================|",
    ]
    for gpu in range(gpus):
        used = b.used_mib[gpu] if gpu < len(b.used_mib) else 3
        lines += [
            f"|   {gpu}  NVIDIA H100 80GB HBM3          On  |   00000000:{18 + gpu:02X}:00.0 Off |                    0 |",
            f"| N/A   33C    P0             69W /  700W |   {used:>5}MiB /  81559MiB |      0%      Default |",
            "|                                         |                        |             Disabled |",
            "+-----------------------------------------+------------------------+----------------------+",
        ]
    lines += [
        "",
        "+-----------------------------------------------------------------------------------------+",
        "| Processes:                                                                              |",
        "|  GPU   GI   CI              PID   Type   Process name                        GPU Memory |",
        "|        ID   ID                                                               Usage      |",
        "|=========================================================================================|",
        "|  No running processes found                                                             |",
        "+-----------------------------------------------------------------------------------------+",
    ]
    return "\n".join(lines) + "\n"


def nvidia_smi_list(gpus: int) -> str:
    return "".join(
        f"GPU {i}: NVIDIA H100 80GB HBM3 (UUID: GPU-6c1e{i:04d}-1111-2222-3333-44445555{i:04d})\n"
        for i in range(gpus)
    )


def topo(gpus: int) -> str:
    head = "\t" + "\t".join(f"GPU{i}" for i in range(gpus)) + "\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID"
    rows = [
        f"GPU{i}\t" + "\t".join("X" if i == j else "NV18" for j in range(gpus)) + "\t0-47\t0\t\tN/A"
        for i in range(gpus)
    ]
    return (
        "\n".join(
            [
                head,
                *rows,
                "",
                "Legend:",
                "  X    = Self",
                "  NV#  = Connection traversing a bonded set of # NVLinks",
            ]
        )
        + "\n"
    )


def inspect_json(b: Bundle) -> str:
    env = [f"{k}={v}" for k, v in b.env.items()] + [
        "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "CUDA_VERSION=12.8.1",
        "NVIDIA_VISIBLE_DEVICES=all",
    ]
    host_config: dict[str, Any] = {
        "NetworkMode": "host",
        "Runtime": "runc",
        "DeviceRequests": [{"Driver": "", "Count": -1, "DeviceIDs": None, "Capabilities": [["gpu"]]}],
    }
    if b.ipc:
        host_config.update({"IpcMode": b.ipc, "ShmSize": 67108864})
    record = {
        "Id": "c0ffee" * 10 + "abcd",
        "Created": "2026-04-01T08:59:58Z",
        "Path": "vllm",
        "Args": ["serve", b.model, "--tensor-parallel-size", str(b.tp)],
        "State": {
            "Status": "exited",
            "Running": False,
            "OOMKilled": False,
            "ExitCode": 1,
            "StartedAt": "2026-04-01T09:00:00Z",
            "FinishedAt": "2026-04-01T09:01:00Z",
        },
        "Image": IMAGE_ID,
        "Name": "/vllm-qwen",
        "HostConfig": host_config,
        "Config": {
            "Hostname": "c0ffeec0ffee",
            "Env": env,
            "Cmd": ["serve", b.model],
            "Image": _image(b),
            "Entrypoint": ["vllm"],
        },
    }
    return json.dumps([record], indent=4) + "\n"


def collect_env(b: Bundle) -> str:
    if b.collect_env_placeholder:
        return (
            "<details>\n<summary>The output of <code>python collect_env.py</code></summary>\n\n```text\n"
            "Your output of `python collect_env.py` here\n```\n\n</details>\n"
        )
    return (
        "Collecting environment information...\n"
        "PyTorch version: 2.8.0+cu128\nIs debug build: False\nCUDA used to build PyTorch: 12.8\n"
        "OS: Ubuntu 22.04.5 LTS (x86_64)\nPython version: 3.12.11 (main) [GCC 11.4.0] (64-bit runtime)\n"
        "Is CUDA available: True\nCUDA runtime version: 12.8.93\n"
        "GPU models and configuration:\nGPU 0: NVIDIA H100 80GB HBM3\nGPU 1: NVIDIA H100 80GB HBM3\n\n"
        "Nvidia driver version: 570.133.20\n"
        "Versions of relevant libraries:\n[pip3] torch==2.8.0\n[pip3] transformers==4.56.1\n"
        f"vLLM Version: {b.collect_env_version}\n"
    )


def write_bundle(root: Path, b: Bundle, name: str | None = None) -> Path:
    folder = root / (name or b.label.replace(" ", "-"))
    folder.mkdir(parents=True, exist_ok=True)
    files: list[tuple[str, str]] = []
    gpus = b.list_gpus if b.list_gpus is not None else b.tp

    def put(path: str, text: str, role: str | None = None) -> None:
        (folder / path).write_text(text)
        if role:
            files.append((path, role))

    if b.log:
        put("vllm.log", vllm_log(b), "vllm_log")
    if b.command:
        put("command.sh", command(b), "launch_command")
    if b.env_file:
        put("environment.env", "".join(f"{k}={v}\n" for k, v in b.env.items()), "environment")
    if b.request:
        put("request.json" if b.request == "json" else "request.sh", request(b), "request")
    if b.smi_host:
        put("nvidia-smi-host.txt", nvidia_smi(b, max(gpus, b.tp)), "nvidia_smi.host")
    if b.smi_container:
        put("nvidia-smi-container.txt", nvidia_smi(b, gpus), "nvidia_smi.container")
    if b.smi_unscoped:
        put("nvidia-smi.txt", nvidia_smi(b, gpus))
    if b.smi_list:
        put("nvidia-smi-L-container.txt", nvidia_smi_list(gpus), "nvidia_smi.container")
    if b.topo:
        put("nvidia-smi-topo-m.txt", topo(max(gpus, 1)), "nvidia_smi.host")
    if b.inspect:
        put("inspect.json", inspect_json(b), "container_inspect")
    if b.collect_env_version or b.collect_env_placeholder:
        put("collect_env.txt", collect_env(b), "collect_env")
    for path, text in b.extra_files.items():
        put(path, text)
    manifest = ["[run]", f'label = "{b.label}"']
    if b.node:
        manifest.append(f'node = "{b.node}"')
    if b.started:
        manifest.append(f'started = "{b.started}"')
    if b.rollback:
        manifest.append(f'rollback = "{b.rollback}"')
    for path, role in files:
        manifest += ["", "[[file]]", f'path = "{path}"', f'role = "{role}"']
    (folder / "bundle.toml").write_text("\n".join(manifest) + "\n")
    return folder
