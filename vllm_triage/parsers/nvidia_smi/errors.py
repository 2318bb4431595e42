"""What nvidia-smi prints instead of output when it cannot work (NVML errors, no devices, …)."""

from __future__ import annotations

import re

from vllm_triage.parsers.base import PasteLine
from vllm_triage.parsers.nvidia_smi.common import (
    Out,
)

_NVML_LIBRARY = re.compile(r"NVML library version:\s*(\d+\.\d+(?:\.\d+)?)")

# (pattern, id, severity, message, advice)
_ERRORS: list[tuple[re.Pattern[str], str, str, str, str]] = [
    (
        re.compile(r"No devices were found"),
        "nvidia-smi-no-devices",
        "error",
        "nvidia-smi found no GPU: no devices were found",
        "In a container: check --gpus / --runtime=nvidia / NVIDIA_VISIBLE_DEVICES before anything else. "
        "On a host: the driver is loaded but no GPU initialised; check `dmesg | grep -i NVRM` "
        "(unsupported GPU for this driver, e.g. Blackwell needs the open kernel module; Xid; "
        "fallen off the bus).",
    ),
    (
        # a terminal may wrap the long message; pastes from rich text turn ' into ’
        re.compile(
            r"NVIDIA-SMI has failed because it couldn.t|couldn.t communicate with the NVIDIA driver", re.I
        ),
        "nvidia-smi-driver-unreachable",
        "error",
        "nvidia-smi couldn't communicate with the NVIDIA driver: the kernel module is not loaded",
        "Check `lsmod | grep nvidia` and `dmesg`; after a kernel update the module must be rebuilt (DKMS) "
        "or the matching driver reinstalled. In a container this means no driver was injected (GPU runtime).",
    ),
    (
        re.compile(r"Failed to initialize NVML:\s*Driver/library version mismatch", re.IGNORECASE),
        "nvidia-smi-nvml-mismatch",
        "error",
        "NVML driver/library version mismatch: the loaded kernel module differs from the user-space driver",
        "The driver packages were upgraded but the old kernel module is still loaded: reboot (or unload and "
        "reload the nvidia modules). Compare /proc/driver/nvidia/version with the library version.",
    ),
    (
        # The other driver/library mismatch: nvidia-smi checks the driver version the NVML library it
        # loaded reports against its own, before any GPU is asked. Seen with an NVML shim or hook
        # library earlier on the library path (Bruce-Lee-LY/cuda_hook #8 and #15) and a rebuilt
        # libnvidia-ml.so.1 (CFSworks/nvml_fix #2, followed by "Failed to properly shut down NVML").
        re.compile(r"Mismatch in versions between nvidia-smi and NVML", re.IGNORECASE),
        "nvidia-smi-nvml-mismatch",
        "error",
        "nvidia-smi and the NVML library it loaded are from different driver versions "
        "(driver/library mismatch)",
        "The libnvidia-ml.so.1 found first is not the one installed with this nvidia-smi: look for a shim, "
        "hook or copied library on LD_LIBRARY_PATH / LD_PRELOAD (`ldconfig -p | grep nvidia-ml`), or an "
        "nvidia-smi copied from another driver. In a container both are mounted from the host by the GPU "
        "runtime; an image that ships its own driver libraries or nvidia-smi breaks that.",
    ),
    (
        re.compile(r"Failed to initialize NVML:\s*Unknown Error", re.IGNORECASE),
        "nvidia-smi-nvml-unknown-error",
        "error",
        "Failed to initialize NVML: unknown error",
        "Inside a container this usually means it lost access to /dev/nvidia* (e.g. after `systemctl "
        "daemon-reload` with the systemd cgroup driver): restart the container; on a host check dmesg.",
    ),
    (
        re.compile(r"Failed to initialize NVML:\s*Insufficient Permissions", re.IGNORECASE),
        "nvidia-smi-nvml-insufficient-permissions",
        "error",
        "Failed to initialize NVML: insufficient permissions on the GPU device files",
        "Check the permissions of /dev/nvidia* and the user's groups, or the container's device access.",
    ),
    (
        re.compile(r"couldn.t find libnvidia-ml\.so", re.IGNORECASE),
        "nvidia-smi-nvml-library-missing",
        "error",
        "nvidia-smi couldn't find libnvidia-ml.so: the driver's user-space libraries are missing",
        "In a container: the GPU runtime did not mount the driver libraries (NVIDIA_DRIVER_CAPABILITIES "
        "must include utility). On a host: reinstall the driver.",
    ),
    (
        re.compile(r"Unable to determine the device handle for GPU\s*([0-9A-Fa-f:.]+)?:?\s*(.*)$"),
        "nvidia-smi-gpu-unreachable",
        "error",
        "nvidia-smi cannot reach a GPU",
        "A GPU is lost or in error (see dmesg for Xid); it needs a reset or a reboot.",
    ),
    (
        re.compile(
            r"nvidia-smi: command not found|'nvidia-smi' is not recognized|"
            r"\"nvidia-smi\": executable file not found|nvidia-smi: not found"
        ),
        "nvidia-smi-not-found",
        "warning",
        "nvidia-smi is not installed or not on PATH here",
        "In a container the GPU runtime mounts nvidia-smi only with the utility capability "
        "(NVIDIA_DRIVER_CAPABILITIES=compute,utility) and only when the GPU runtime is used at all.",
    ),
    (
        re.compile(r"Failed to initialize NVML:\s*(?!Driver/library|Unknown Error|Insufficient)(.+)$"),
        "nvidia-smi-nvml-init-failed",
        "error",
        "Failed to initialize NVML",
        "nvidia-smi could not initialise NVML; the message says why.",
    ),
]


# one pass over every line when recognising, instead of one per error pattern
ANY_ERROR = re.compile("|".join(f"(?:{pattern.pattern})" for pattern, *_ in _ERRORS), re.IGNORECASE)


def read(lines: list[PasteLine], out: Out) -> None:
    library = next((m for m in (_NVML_LIBRARY.search(line.text) for line in lines) if m), None)
    library_line = next((line.number for line in lines if _NVML_LIBRARY.search(line.text)), None)
    seen: set[str] = set()
    for line in lines:
        for pattern, id_, severity, message, advice in _ERRORS:
            match = pattern.search(line.text)
            if not match or id_ in seen:
                continue
            seen.add(id_)
            text = message
            if id_ == "nvidia-smi-nvml-mismatch" and library:
                text += (
                    f" (NVML library version {library.group(1)}; the kernel module's version is not shown)"
                )
            elif id_ in ("nvidia-smi-gpu-unreachable", "nvidia-smi-nvml-init-failed"):
                text += f": {line.text.strip()}"
            out.problem(id_, severity, text, line.number, advice)
            break
    if library and library_line is not None:
        # the user-space library's version, not the loaded driver's: so never driver_version
        out.fact("nvml_version", library.group(1), library_line)
