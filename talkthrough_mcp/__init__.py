"""Talkthrough's read-only MCP server: lazy, capped reads over the pipeline's Parquet outputs.

The read model lives in :mod:`talkthrough_assets.read`; here :mod:`.tools` declares the tools,
:mod:`.protocol` registers them and the prompts on the official ``mcp`` SDK, :mod:`.results` maps answers to
content blocks, :mod:`.guidance` holds the instructions and prompts and :mod:`.server` serves them (stdio or
HTTP). Keep this file free of imports: the package must also work as a
namespace package.
"""
