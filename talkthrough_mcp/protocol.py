"""The official SDK's MCPServer as Talkthrough serves it: a tool registered from a typed function (its answer's
model becomes the tool's ``outputSchema``), argument problems as structured ``invalid_argument`` tool errors (not
pydantic text), prompts that reject bad arguments with a JSON-RPC invalid-params error (not a logged traceback),
and schemas shaped for the wire (:mod:`talkthrough_mcp.wire_schema`). The tools themselves are in
:mod:`talkthrough_mcp.tools`."""

from __future__ import annotations

import inspect
import logging
from typing import Annotated, Any, Callable, get_args, get_origin

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.prompts.base import Prompt, PromptArgument
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, CallToolResult, Tool, ToolAnnotations
from pydantic import ValidationError

from talkthrough_assets import store
from talkthrough_assets.read.errors import InvalidArgument, ReadError
from talkthrough_assets.read.images import ImageResult
from talkthrough_assets.read.reader import Reader

from talkthrough_mcp import guidance
from talkthrough_mcp.results import call, error_result, internal_error, validation_error
from talkthrough_mcp.wire_schema import input_schema, output_schema

log = logging.getLogger("talkthrough_mcp")

PROMPT_ARG_MAX_CHARS = 20_000
# destructive/idempotent hints mean something only when read_only_hint is false (MCP spec): not sent
READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)


def answer_model(fn: Callable) -> type:
    """The typed answer a tool function returns (the model inside an ``ImageResult[...]``)."""
    answer = inspect.signature(fn, eval_str=True).return_annotation
    return get_args(answer)[0] if get_origin(answer) is ImageResult else answer


class TalkthroughMCP(MCPServer):

    def __init__(self, reader: Callable[[], Reader], **kwargs):
        super().__init__(**kwargs)
        self.reader = reader
        self._listing: list[Tool] | None = None

    def add_read_tool(self, fn: Callable) -> None:
        """Register ``fn(reader, **arguments) -> answer`` as a read-only tool named as the function: its docstring
        is the description, its other parameters the arguments, and its answer's model (the return annotation)
        the ``outputSchema``, which the SDK derives from ``Annotated[CallToolResult, model]`` and validates every
        ``structuredContent`` against."""
        sig = inspect.signature(fn, eval_str=True)

        def run(**arguments) -> CallToolResult:
            return call(lambda: fn(self.reader(), **arguments))

        run.__name__ = fn.__name__
        run.__signature__ = sig.replace(parameters=list(sig.parameters.values())[1:],  # type: ignore[attr-defined]
                                        return_annotation=Annotated[CallToolResult, answer_model(fn)])
        self.add_tool(run, name=fn.__name__, description=inspect.getdoc(fn), annotations=READ_ONLY)

    def add_prompts(self) -> None:
        """Every workflow prompt of :data:`guidance.PROMPTS`, its arguments described from the same spec."""
        for name, spec in guidance.PROMPTS.items():
            self.add_prompt(Prompt(
                name=name, description=spec["description"], fn=lambda name=name, **args: guidance.render(name, **args),
                arguments=[PromptArgument(name=a, description=d, required=True) for a, d in spec["arguments"].items()]))

    async def list_tools(self) -> list[Tool]:
        """The tools as they go on the wire: optional arguments by their plain type, output schemas trimmed."""
        if self._listing is None:
            self._listing = [t.model_copy(update={"input_schema": input_schema(t.input_schema),
                                                  "output_schema": output_schema(t.output_schema)})
                             for t in await super().list_tools()]
        return self._listing

    async def call_tool(self, name: str, arguments: dict[str, Any], context=None):
        tool = next((t for t in await self.list_tools() if t.name == name), None)
        if tool is None:
            known = ", ".join(t.name for t in await self.list_tools())
            return error_result(ReadError.with_code("unknown_tool", f"no tool named {name[:60]!r}",
                                                    hint=f"tools: {known}"))
        params = tool.input_schema
        # an explicit null for an optional argument means "omitted", for every tool and argument alike
        required = set(params.get("required", ()))
        arguments = {k: v for k, v in (arguments or {}).items() if v is not None or k in required}
        unknown = sorted(set(arguments) - set(params.get("properties", {})))
        if unknown:
            shown = ", ".join(repr(u[:40]) for u in unknown[:5])
            return error_result(InvalidArgument(
                f"{name}: unknown argument(s) {shown}",
                hint=f"accepted arguments: {', '.join(sorted(params.get('properties', {})))}"))
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError as e:  # an answer that does not fit its own schema: a bug, said as one
            log.error("tool %s failed", name, exc_info=e.__cause__)
            return internal_error(e.__cause__ or e)
        except ToolError as e:
            if isinstance(e.__cause__, ValidationError):
                return validation_error(name, e.__cause__, params)
            raise

    async def get_prompt(self, name: str, arguments: dict[str, Any] | None = None, context=None):
        spec = guidance.PROMPTS.get(name)
        if spec is None:
            raise MCPError(INVALID_PARAMS, f"no prompt named {name[:60]!r}; prompts: {', '.join(guidance.PROMPTS)}",
                           {"error": "unknown_prompt"})
        args = arguments or {}
        problems = []
        for a in spec["arguments"]:
            v = args.get(a)
            cap = guidance.PROMPT_ARG_MAX_CHARS.get(a, PROMPT_ARG_MAX_CHARS)
            if not isinstance(v, str) or not v.strip():
                problems.append(f"{a} is required (a non-empty string)")
            elif len(v) > cap:
                problems.append(f"{a} is {len(v)} characters; at most {cap} are accepted")
            elif a == "id" and not store.ID_RE.fullmatch(v.strip()):
                problems.append(f"id must be 16 lowercase hex characters, got {v.strip()[:40]!r}")
        unknown = sorted(set(args) - set(spec["arguments"]))
        if unknown:
            problems.append(f"unknown argument(s): {', '.join(repr(u[:40]) for u in unknown[:5])}")
        if problems:
            raise MCPError(INVALID_PARAMS, f"prompt {name}: " + "; ".join(problems),
                           {"error": "invalid_argument", "arguments": list(spec["arguments"])})
        return await super().get_prompt(name, arguments, context)
