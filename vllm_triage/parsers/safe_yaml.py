"""The one way YAML is read in this project: PyYAML's safe loader, with bounds.

PyYAML's safe loader builds no Python objects from tags, but it still expands aliases: an alias
is a second reference to the anchored node, so nine nested anchors of ten aliases each (the
"billion laughs" file, a few hundred bytes) make a structure of a billion leaves for whoever walks
it. Here the node graph is measured before anything is built: a document whose aliases would
expand past `max_nodes` nodes, that uses more than `max_aliases` aliases, that refers to itself,
or whose text is over `max_bytes`, is refused with `YamlRefused` — one sentence saying why —
in time linear in the text. Real launch files (compose, Kubernetes, Helm values, Ray Serve
configs) use a handful of aliases at most (`<<: *defaults`).

    >>> load("a: &x [1, 2]\\nb: *x\\n")
    {'a': [1, 2], 'b': [1, 2]}
    >>> load("a: &a [x, x]\\nb: &b [*a, *a]\\nc: [*b, *b]\\n", max_nodes=10)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    vllm_triage.parsers.safe_yaml.YamlRefused: YAML refused: its aliases expand past 10 nodes (billion-...)
"""

from __future__ import annotations

from typing import Any

import yaml

MAX_BYTES = 4 * 2**20  # launch files are a few KB; a Helm values file rarely passes 100 KB
MAX_ALIASES = 256
MAX_NODES = 200_000  # nodes after alias expansion; a large real values.yaml has a few thousand

__all__ = [
    "MAX_ALIASES",
    "MAX_BYTES",
    "MAX_NODES",
    "YamlRefused",
    "check_size",
    "compose_all",
    "construct",
    "load",
]


class YamlRefused(ValueError):
    """The YAML was not read because of its size or its aliases (never a syntax error: those stay
    `yaml.YAMLError`, so a paste cut short can still be read up to where it breaks)."""


class _CountingLoader(yaml.SafeLoader):
    """The safe loader, counting alias events as the composer meets them."""

    aliases_seen = 0
    max_aliases = MAX_ALIASES

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self.aliases_seen += 1
            if self.aliases_seen > self.max_aliases:
                raise YamlRefused(f"YAML refused: more than {self.max_aliases} aliases")
        return super().compose_node(parent, index)


def compose_all(
    text: str,
    *,
    max_bytes: int = MAX_BYTES,
    max_aliases: int = MAX_ALIASES,
    max_nodes: int = MAX_NODES,
) -> list[yaml.Node]:
    """The node trees of every document in `text` (empty documents left out), checked against
    the bounds. Raises `YamlRefused` past a bound and `yaml.YAMLError` on a syntax error."""
    check_size(text, max_bytes)
    loader = _CountingLoader(text)
    loader.max_aliases = max_aliases
    nodes: list[yaml.Node] = []
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is not None:
                _check_expansion(node, max_nodes)
                nodes.append(node)
    except RecursionError:
        raise YamlRefused("YAML refused: nested too deeply to read") from None
    finally:
        loader.dispose()
    return nodes


def check_size(text: str, max_bytes: int = MAX_BYTES) -> None:
    """Refuse a text over `max_bytes` (UTF-8) before anything else is done with it."""
    if len(text) > max_bytes or len(text.encode("utf-8", "surrogatepass")) > max_bytes:
        raise YamlRefused(f"YAML refused: over the {max_bytes}-byte limit for a YAML input")


def construct(node: yaml.Node) -> Any:
    """Python data of a node tree from `compose_all` (safe constructors only)."""
    return yaml.SafeLoader("").construct_document(node)


def load(text: str, **bounds: int) -> Any:
    """The first document of `text` as Python data (None for an empty text), within the bounds."""
    nodes = compose_all(text, **bounds)
    return construct(nodes[0]) if nodes else None


def _check_expansion(root: yaml.Node, max_nodes: int) -> None:
    """Count the nodes the document has once every alias is expanded, without expanding: a
    node's size is computed once (aliases share node objects) and added up per reference.
    A node that contains itself (`&a [*a]`) can never be expanded, so it is refused too."""
    sizes: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    in_progress: set[int] = set()
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            in_progress.discard(key)
            total = 1 + sum(sizes[id(child)] for child in _children(node))
            if total > max_nodes:
                raise YamlRefused(
                    f"YAML refused: its aliases expand past {max_nodes} nodes (billion-laughs shape)"
                )
            sizes[key] = total
            continue
        if key in sizes:
            continue
        if key in in_progress:
            raise YamlRefused("YAML refused: an alias refers to the node that contains it")
        in_progress.add(key)
        stack.append((node, True))
        for child in _children(node):
            if id(child) in in_progress:
                raise YamlRefused("YAML refused: an alias refers to the node that contains it")
            if id(child) not in sizes:
                stack.append((child, False))


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []
