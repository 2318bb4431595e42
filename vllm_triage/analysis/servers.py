"""Several servers in one log: `docker compose logs` of a stack that runs more than one vLLM.

Compose puts the service name in front of every line (`chat-small  | (APIServer pid=1) INFO …`).
Each service is its own container and its own vLLM process tree — every one of them has its
`(APIServer pid=1)`, its milestones and its readiness — so one service becoming ready, or serving,
says nothing about another one that failed to start. A log holding several services is read as
one log per service; a log with one service (or none) is read whole.
"""

from __future__ import annotations

from vllm_triage.analysis.model import Row


def servers(rows: list[Row]) -> list[tuple[str | None, list[Row]]]:
    """(service, its rows) per compose service of a log that holds several; else [(None, rows)].

    Only a service that printed a logger line (a level or a vLLM process prefix) counts: a stray
    `word | text` line — a table in a paste, a shell pipe echoed — is no container. A line with no
    service of its own (a paste's unprefixed line, a stray `word |`) belongs to the service of the
    line before it; the lines before any service's first line belong to every one of them."""
    names = list(dict.fromkeys(r.service for r in rows if r.service and (r.level or r.process)))
    if len(names) < 2:
        return [(None, rows)]
    known = set(names)
    shared: list[Row] = []
    by_service: dict[str, list[Row]] = {name: [] for name in names}
    current: str | None = None
    for row in rows:
        if row.service in known:
            current = row.service
        if current is None:
            shared.append(row)
        else:
            by_service[current].append(row)
    return [(name, shared + by_service[name]) for name in names]
