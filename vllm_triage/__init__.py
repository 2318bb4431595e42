"""vllm-triage: offline forensic analyzer for failed vLLM deployments."""

__version__ = "0.1.0"
