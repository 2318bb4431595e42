"""Whether the failing process names a request the API server took in.

The OpenAI-compatible server gives every request it accepts an id of its own shape
(`chatcmpl-<hex>` for chat, `cmpl-<hex>` or `cmpl-<uuid>-0` for completions, `embd-<hex>` for
embeddings) and accepts requests only once it is ready. A record of the failing process that names
such an id was written while serving, whatever module wrote it: the KV connector's lazy
handshake ("Handshake failed for request chatcmpl-…", vllm#27083), its transfer bookkeeping
("Releasing expired KV blocks for request cmpl-…", vllm#25562; "start_load_kv for request cmpl-…",
vllm#20609), the scheduler's "Request chatcmpl-… failed (engine dead)". Start-up's dummy and
profiling requests carry no such id, and offline `LLM` numbers its requests.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from vllm_triage.analysis.blocks import Block, StreamIndex
from vllm_triage.analysis.model import Row

# `chatcmpl` is no word of anything but such an id, so it counts even where a paste cut the id
# after it (vllm#27083 ends "Handshake failed for request chatcmpl"); the shorter prefixes need
# eight characters of the random hex part (uuid4().hex, or a dashed uuid) to rule out prose.
_API_REQUEST_ID = re.compile(r"\bchatcmpl\b|\b(?:cmpl|embd)-[0-9a-f]{8}")

# How many of the failing process's own lines after the block still belong to its failure: the
# connector logs the error, then which request it failed (two records, one line apart).
FOLLOWING_ROWS = 3

# What the phase decision is told (beside the consequences' "request" / "startup").
SERVING_REQUEST_ID = "request_id"


def names_api_request(rows: Iterable[Row]) -> bool:
    return any(_API_REQUEST_ID.search(r.message) for r in rows)


def serving_by_request_id(index: StreamIndex, block: Block, chosen: Row) -> bool:
    """Whether the root's own record, or the next lines its process wrote, name an API request."""
    own = [r for r in block.rows if r.line >= chosen.line]
    last = block.rows[-1] if block.rows else chosen
    return names_api_request(own) or names_api_request(index.neighbours(last, +1, FOLLOWING_ROWS))
