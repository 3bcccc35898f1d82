"""Tool schemas as they go on the wire (``tools/list``), shaped for every client and for context cost.

* Input: no pydantic titles (the property name says it), and no ``anyOf [T, null]``: an optional
  argument is declared as plain ``T`` (``type: integer``, ``boolean``, ``object``...), omitted = its
  default. Clients that convert command-line text by the declared type (the MCP
  Inspector CLI converts only ``type: integer|number|boolean|object``) can then send it. Validation still
  uses the argument model, which accepts an explicit ``null`` too.
* Output: the SDK derives each tool's schema from its typed answer (``talkthrough_assets.read``'s models,
  ``$defs`` and ``anyOf [T, null]`` as pydantic writes them). On the wire the references are inlined, a
  nullable field is ``type: [T, "null"]``, and the advertised ``outputSchema`` types the answer's required
  top-level fields; an object below them (a frame, a hit, a segment) names its required fields without
  their types (so every other field stays allowed), and titles and descriptions are dropped (the tool
  descriptions and server instructions carry that guidance once), so ``tools/list`` stays under 12 000
  characters (``tests/unit/test_tools_list.py``). The models document every field.
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


def _trim(node, level: str = "top"):
    """A schema trimmed for the wire. ``top``: the answer, whose required fields are kept and typed; ``field``:
    one of them, typed only; ``record``: an element of a list or map below them (a frame, a hit, a segment),
    which names its required fields. A union below the top is the types of its branches; ``enum`` needs no
    ``type`` beside it; extra fields are allowed unless said otherwise, so ``additionalProperties: true`` goes."""
    if isinstance(node, list):
        return [_trim(v, level) for v in node]
    if not isinstance(node, dict):
        return node
    if level != "top" and "anyOf" in node:
        types = [b.get("type", "object") for b in node["anyOf"]]
        flat = list(dict.fromkeys(t for ty in types for t in (ty if isinstance(ty, list) else [ty])))
        return {"type": flat[0] if len(flat) == 1 else flat}
    out = {}
    for k, v in node.items():
        if k == "properties" and isinstance(v, dict):
            if level == "top":
                kept = {name: _trim(sub, "field") for name, sub in v.items() if name in node.get("required", ())}
                if kept:
                    out[k] = kept
        elif k == "required" and level == "field":
            continue
        elif k in ("items", "additionalProperties") and isinstance(v, dict):
            out[k] = _trim(v, "record")
        elif (k == "additionalProperties" and v is True) or (k == "type" and "enum" in node):
            continue
        else:
            out[k] = v
    return out


def _inline(node, defs: dict):
    """``node`` with every ``$ref`` into ``$defs`` replaced by its target, and no ``$defs``."""
    if isinstance(node, list):
        return [_inline(v, defs) for v in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        target = defs[node["$ref"].rsplit("/", 1)[-1]]
        return _inline({**target, **{k: v for k, v in node.items() if k != "$ref"}}, defs)
    return {k: _inline(v, defs) for k, v in node.items() if k != "$defs"}


def _plain(node):
    """``anyOf [T, null]`` as ``T`` with ``null`` among its types; no ``additionalProperties: false`` (a field
    left out of the trimmed schema must stay allowed)."""
    if isinstance(node, list):
        return [_plain(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _plain(v) for k, v in node.items() if not (k == "additionalProperties" and v is False)}
    if k_any := out.get("anyOf"):
        inner = [b for b in k_any if b != _NULL]
        if len(inner) == 1 and len(k_any) == 2 and isinstance(inner[0].get("type"), str):
            rest = {k: v for k, v in out.items() if k not in ("anyOf", "default")}
            out = {**inner[0], **rest, "type": [inner[0]["type"], "null"]}
    return out


def output_schema(schema: dict | None) -> dict | None:
    """A tool's outputSchema for the wire: the types of its required top-level fields, the required names of
    the objects below them, no titles or descriptions."""
    if schema is None:
        return None
    return _trim(_plain(_strip_props(_inline(schema, schema.get("$defs", {})), ("title", "description"))))
