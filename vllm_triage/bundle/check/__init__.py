"""The pre-filing checklist (`vllm-triage check`): its items, their data and verdicts."""
