"""Talkthrough's read-only MCP server: lazy, capped reads over the pipeline's Parquet outputs.

Logic lives in plain modules (:mod:`.reader`, :mod:`.index`, :mod:`.media`, :mod:`.guidance`);
:mod:`.server` only registers tools and prompts on the official ``mcp`` SDK and maps results to
content blocks. Keep this file free of imports: the package must also work as a namespace package.
"""
