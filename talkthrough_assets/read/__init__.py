"""The published read model: snapshots of a recording's stored outputs, formats, the report, search; below both the pipeline surfaces and the MCP server."""
