"""Tool results on the wire: reader answers as content blocks (JSON text, JPEG image blocks), reader errors and
argument problems as ``isError`` results whose text is ``{error, message, hint}``, and no server path in any of
them. Used by :mod:`talkthrough_mcp.tools`; holds no tool of its own."""

from __future__ import annotations

import base64
import logging
import re
from typing import Any, Callable

from mcp_types import CallToolResult, ImageContent, TextContent
from pydantic import ValidationError

from talkthrough_assets import store
from talkthrough_assets.read.answers import Answer
from talkthrough_assets.read.errors import InvalidArgument, ReadError
from talkthrough_assets.read.args import dumps
from talkthrough_assets.read.images import ImageResult

log = logging.getLogger("talkthrough_mcp")

RESPONSE_MAX_CHARS = 40_000      # hard ceiling on any JSON text block (every tool also budgets itself)

_ABS_PATH = re.compile(r"(?<![\w.])/(?:[^\s'\"/:]+/)+([^\s'\"/:]*)")


def scrub(text: str, keep: tuple[str, ...] = ()) -> str:
    """No server paths in anything sent to a client: the data root becomes <data root>, any other
    absolute path its last component. ``keep``: the client's own text quoted in ``text`` (an id it
    sent that looks like a path), left as sent."""
    kept = {f"\x00{i}\x00": k for i, k in enumerate(k for k in keep if k and k in text)}
    for mark, k in kept.items():
        text = text.replace(k, mark)
    for root in {store.data_location(), str(store.home())}:
        text = text.replace(root, "<data root>")
    text = _ABS_PATH.sub(lambda m: m.group(1) or "<path>", text)
    for mark, k in kept.items():
        text = text.replace(mark, k)
    return text


def _text(obj: dict[str, Any]) -> str:
    text = dumps(obj)
    if len(text) > RESPONSE_MAX_CHARS:  # a bug in a tool's own budget: never ship it
        raise RuntimeError(f"response of {len(text)} characters exceeds the {RESPONSE_MAX_CHARS} cap")
    return text


def to_result(result: Answer | ImageResult) -> CallToolResult:
    """The answer's JSON as the text block and as ``structuredContent``; an image answer's images after it."""
    answer, images = (result.meta, result.images) if isinstance(result, ImageResult) else (result, [])
    data = answer.dump()
    content: list = [TextContent(type="text", text=_text(data))]
    for img in images:
        content.append(TextContent(type="text", text=img.caption))
        content.append(ImageContent(type="image", data=base64.b64encode(img.data).decode("ascii"),
                                    mime_type=img.mime_type))
    return CallToolResult(content=content, structured_content=data)


def error_result(err: ReadError) -> CallToolResult:
    """An ``isError`` result whose one text block is the JSON ``{error, message, hint}``. No
    ``structuredContent``: it would have to match the tool's ``outputSchema`` (the success shape),
    and the TypeScript SDK validates it even on errors, replacing the error with a schema
    complaint; every client reads the text block."""
    body = {k: scrub(v, getattr(err, "echo", ())) if isinstance(v, str) else v for k, v in err.to_dict().items()}
    return CallToolResult(content=[TextContent(type="text", text=dumps(body))], is_error=True)


def call(answer: Callable[[], Answer | ImageResult]) -> CallToolResult:
    """Run one reader call; reader errors become isError results, never protocol errors or crashes."""
    try:
        return to_result(answer())
    except ReadError as e:
        return error_result(e)
    except Exception as e:  # a bug or a damaged file: still a readable tool error
        log.exception("tool failed")
        return internal_error(e)


def internal_error(e: BaseException) -> CallToolResult:
    err = ReadError(f"internal error: {type(e).__name__}: {e}".splitlines()[0][:300],
                    hint="retry; if it persists, reprocess the recording or report the bug")
    err.code = "internal"
    return error_result(err)


_EXPECTED = {"int_type": "an integer", "int_parsing": "an integer", "bool_type": "true or false",
             "bool_parsing": "true or false", "string_type": "a string", "dict_type": "an object",
             "missing": "required", "extra_forbidden": "not an accepted argument"}


def validation_error(tool: str, exc: ValidationError, schema: dict | None) -> CallToolResult:
    """pydantic's report as one structured invalid_argument error (field names, expectations, the
    type that was sent; never the sent value itself, which may be huge)."""
    problems = []
    for e in exc.errors():
        loc = ".".join(str(p) for p in e["loc"] if not (isinstance(p, str) and p in ("int", "none", "str", "bool")))
        if e["type"] == "missing":
            problems.append(f"{loc} is required")
            continue
        if e["type"] == "string_too_long":
            got = len(e["input"]) if isinstance(e.get("input"), str) else "?"
            problems.append(f"{loc} is too long: at most {(e.get('ctx') or {}).get('max_length')} characters "
                            f"(got {got})")
            continue
        expected = _EXPECTED.get(e["type"])
        if expected is None:
            expected = re.sub(r"^(Input|Value) should (be |have )?", "", e.get("msg", "invalid")).rstrip(".")
        got = type(e.get("input")).__name__ if "input" in e else None
        got = {"bool": "boolean", "str": "string", "NoneType": "null", "dict": "object", "list": "array",
               "float": "number", "int": "integer"}.get(got, got)
        problems.append(f"{loc} must be {expected}" + (f" (got {got})" if got else ""))
    problems = list(dict.fromkeys(problems))
    accepted = sorted((schema or {}).get("properties", {}))
    err = InvalidArgument(f"{tool}: " + "; ".join(problems[:6]),
                          hint=f"accepted arguments: {', '.join(accepted)}" if accepted else None)
    return error_result(err)

