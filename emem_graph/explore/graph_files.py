"""A graph selection written as one file: GraphML or node-link JSON (what networkx, Gephi,
Cytoscape and yEd read). Both are streamed row by row, so a large memory is never held twice.

Every node carries ``label`` (its table: Observation, Episode, Gist, Entity) and its properties;
every edge carries ``label`` (its rel table) and its properties. A property that is not set
(NULL) is left out, never written as an empty string or ``null``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TextIO
from xml.sax.saxutils import XMLGenerator
from xml.sax.xmlreader import AttributesImpl

import pyarrow as pa
from tqdm import tqdm

from emem_graph.explore.selection import EDGE_ENDS, GraphSelection

GRAPHML_NS = "http://graphml.graphdrawing.org/xmlns"
_XSI_NS = "http://www.w3.org/2001/XMLSchema-instance"
_GRAPHML_TYPES = {
    pa.string(): "string",
    pa.large_string(): "string",
    pa.float64(): "double",
    pa.float32(): "float",
    pa.int64(): "long",
    pa.int32(): "int",
    pa.bool_(): "boolean",
}
# Characters XML 1.0 cannot hold at all (not even escaped): replaced, so the file stays valid.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_BATCH_ROWS = 10_000


def write_graphml(
    selection: GraphSelection, path: Path, *, graph_data: dict[str, str], progress: bool = True
) -> None:
    """Write ``selection`` as one directed GraphML file.

    Keys are declared per property with its GraphML type (string, double, long, boolean);
    a name typed differently in two tables is declared string.

    Args:
        selection: the nodes and edges to write.
        path: the file to write (replaced if it exists).
        graph_data: string attributes of the graph itself (schema version, filter).
        progress: show a progress bar on stderr.
    """
    node_keys = _declared(selection.nodes.values(), prefix="n", skip={"id"})
    edge_keys = _declared(selection.edges.values(), prefix="e", skip=set(EDGE_ENDS))
    with open(path, "w", encoding="utf-8") as handle, _bar(selection, "graphml", progress) as bar:
        xml = XMLGenerator(handle, encoding="utf-8", short_empty_elements=True)
        xml.startDocument()
        xml.startElement(
            "graphml",
            AttributesImpl(
                {
                    "xmlns": GRAPHML_NS,
                    "xmlns:xsi": _XSI_NS,
                    "xsi:schemaLocation": f"{GRAPHML_NS} {GRAPHML_NS}/1.0/graphml.xsd",
                }
            ),
        )
        graph_keys = {name: (f"g{i}", "string") for i, name in enumerate(graph_data)}
        for domain, keys in (("graph", graph_keys), ("node", node_keys), ("edge", edge_keys)):
            for name, (key_id, key_type) in keys.items():
                _empty(
                    xml,
                    "key",
                    {"id": key_id, "for": domain, "attr.name": name, "attr.type": key_type},
                )
        xml.ignorableWhitespace("\n")
        xml.startElement("graph", AttributesImpl({"id": "G", "edgedefault": "directed"}))
        for name, value in graph_data.items():
            _data(xml, graph_keys[name][0], _xml_text(value))
        for table_name, table in selection.nodes.items():
            for row in _rows(table):
                xml.ignorableWhitespace("\n")
                xml.startElement("node", AttributesImpl({"id": _xml_text(row["id"])}))
                _data(xml, node_keys["label"][0], table_name)
                for name, value in row.items():
                    if name != "id" and _present(value):
                        _data(xml, node_keys[name][0], _graphml_value(value))
                xml.endElement("node")
                bar.update()
        for rel, table in selection.edges.items():
            for row in _rows(table):
                xml.ignorableWhitespace("\n")
                xml.startElement(
                    "edge",
                    AttributesImpl(
                        {"source": _xml_text(row["from"]), "target": _xml_text(row["to"])}
                    ),
                )
                _data(xml, edge_keys["label"][0], rel)
                for name, value in row.items():
                    if name not in EDGE_ENDS and _present(value):
                        _data(xml, edge_keys[name][0], _graphml_value(value))
                xml.endElement("edge")
                bar.update()
        xml.ignorableWhitespace("\n")
        xml.endElement("graph")
        xml.ignorableWhitespace("\n")
        xml.endElement("graphml")
        xml.ignorableWhitespace("\n")
        xml.endDocument()


def write_node_link(
    selection: GraphSelection, path: Path, *, graph_data: dict[str, Any], progress: bool = True
) -> None:
    """Write ``selection`` as node-link JSON, the form ``networkx.node_link_graph`` reads.

    The top-level keys are ``directed`` (true), ``multigraph`` (true), ``graph``, ``nodes`` and
    ``edges`` (networkx >= 3.4 reads "edges" by default from 3.6; pass ``edges="edges"`` before).
    A node is ``{"id", "label", ...properties}``, an edge
    ``{"source", "target", "key", "label", ...properties}`` with ``key`` = ``label``, the rel
    table (one edge per pair and type). Non-finite floats are left out (JSON has no NaN).

    Args:
        selection: the nodes and edges to write.
        path: the file to write (replaced if it exists).
        graph_data: attributes of the graph itself (schema version, filter).
        progress: show a progress bar on stderr.
    """
    with open(path, "w", encoding="utf-8") as handle, _bar(selection, "json", progress) as bar:
        handle.write('{"directed": true, "multigraph": true, "graph": ')
        handle.write(json.dumps(graph_data, allow_nan=False))
        handle.write(',\n"nodes": [')
        _json_items(
            handle,
            (
                {"id": row["id"], "label": table_name, **_properties(row, {"id"})}
                for table_name, table in selection.nodes.items()
                for row in _rows(table)
            ),
            bar,
        )
        handle.write('],\n"edges": [')
        _json_items(
            handle,
            (
                {
                    "source": row["from"],
                    "target": row["to"],
                    "key": rel,
                    "label": rel,
                    **_properties(row, set(EDGE_ENDS)),
                }
                for rel, table in selection.edges.items()
                for row in _rows(table)
            ),
            bar,
        )
        handle.write("]}\n")


def _bar(selection: GraphSelection, desc: str, progress: bool) -> tqdm:
    total = sum(selection.node_counts().values()) + sum(selection.edge_counts().values())
    return tqdm(total=total, desc=f"writing {desc}", unit="item", disable=not progress)


def _rows(table: pa.Table) -> Iterator[dict[str, Any]]:
    for batch in table.to_batches(max_chunksize=_BATCH_ROWS):
        yield from batch.to_pylist()


def _present(value: Any) -> bool:
    return value is not None and not (isinstance(value, float) and not math.isfinite(value))


def _properties(row: dict[str, Any], skip: set[str]) -> dict[str, Any]:
    return {name: value for name, value in row.items() if name not in skip and _present(value)}


def _json_items(handle: TextIO, items: Iterable[dict[str, Any]], bar: tqdm) -> None:
    separator = "\n"
    for item in items:
        handle.write(separator)
        handle.write(json.dumps(item, allow_nan=False, ensure_ascii=False))
        separator = ",\n"
        bar.update()
    if separator != "\n":
        handle.write("\n")


def _declared(
    tables: Iterable[pa.Table], *, prefix: str, skip: set[str]
) -> dict[str, tuple[str, str]]:
    """GraphML key (id, attr.type) per attribute name: ``label`` first, then every column."""
    types: dict[str, str] = {"label": "string"}
    for table in tables:
        for column in table.schema:
            if column.name in skip:
                continue
            graphml_type = _GRAPHML_TYPES.get(column.type, "string")
            if types.setdefault(column.name, graphml_type) != graphml_type:
                types[column.name] = "string"
    return {name: (f"{prefix}{i}", kind) for i, (name, kind) in enumerate(types.items())}


def _graphml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return _xml_text(str(value))


def _xml_text(value: Any) -> str:
    return _NOT_XML.sub("\ufffd", str(value))


def _data(xml: XMLGenerator, key: str, text: str) -> None:
    xml.startElement("data", AttributesImpl({"key": key}))
    xml.characters(text)
    xml.endElement("data")


def _empty(xml: XMLGenerator, name: str, attributes: dict[str, str]) -> None:
    xml.ignorableWhitespace("\n")
    xml.startElement(name, AttributesImpl(attributes))
    xml.endElement(name)
