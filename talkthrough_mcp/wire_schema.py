"""Tool schemas as they go on the wire (``tools/list``), shaped for every client and for context cost.

* Input: no pydantic titles (the property name says it), and no ``anyOf [T, null]``: an optional
  argument is declared as plain ``T`` (``type: integer``, ``boolean``, ``object``...), omitted = its
  default. Clients that convert command-line text by the declared type (the MCP
  Inspector CLI converts only ``type: integer|number|boolean|object``) can then send it. Validation still
  uses the argument model, which accepts an explicit ``null`` too.
* Output: the advertised ``outputSchema`` types the answer's required top-level fields; an object below
  them (a frame, a hit, a segment) names its required fields without their types, and field descriptions
  are dropped (the tool descriptions and server instructions carry that guidance once), so ``tools/list``
  stays under 12 000 characters (``tests/unit/test_tools_list.py``). The full schemas
  (:mod:`talkthrough_mcp.schemas`) document every field.
"""

from __future__ import annotations

_NULL = {"type": "null"}


def _unwrap_nullable(prop: dict) -> dict:
    """``{anyOf: [T, null], default: null, ...}`` -> ``{...T, ...}`` without the null default."""
    branches = prop.get("anyOf")
    if not isinstance(branches, list) or _NULL not in branches or len(branches) != 2:
        return prop
    (inner,) = [b for b in branches if b != _NULL]
    out = {k: v for k, v in prop.items() if k != "anyOf" and not (k == "default" and v is None)}
    return {**inner, **out}


def _strip_props(node, drop: tuple[str, ...]):
    """``node`` without the string-valued keywords in ``drop`` (a property named like one is kept)."""
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            if k == "properties" and isinstance(v, dict):
                out[k] = {name: _strip_props(sub, drop) for name, sub in v.items()}
            elif k in drop and isinstance(v, str):
                continue
            else:
                out[k] = _strip_props(v, drop)
        return out
    if isinstance(node, list):
        return [_strip_props(v, drop) for v in node]
    return node


def input_schema(schema: dict) -> dict:
    """A tool's input schema for the wire: no titles, optional arguments declared by their plain type."""
    lean = _strip_props(schema, ("title",))
    props = lean.get("properties") or {}
    lean["properties"] = {name: _unwrap_nullable(p) for name, p in props.items()}
    return lean


def _required_only(node, top: bool = True):
    """Object schemas reduced to their required properties (others stay allowed, just not listed); below
    the top level an object keeps its ``required`` names and loses its ``properties``."""
    if isinstance(node, list):
        return [_required_only(v, top) for v in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for k, v in node.items():
        if k != "properties" or not isinstance(v, dict):
            out[k] = _required_only(v, top)
        elif top:
            kept = {name: _required_only(sub, False) for name, sub in v.items() if name in node.get("required", ())}
            if kept:
                out[k] = kept
    return out


def output_schema(schema: dict) -> dict:
    """A tool's outputSchema for the wire: the types of its required top-level fields, the required names of
    the objects below them, no field descriptions."""
    return _required_only(_strip_props(schema, ("description",)))
