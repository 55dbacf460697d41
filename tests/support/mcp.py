"""Calling MCP tools in tests (tests/e2e/test_mcp.py over HTTP and stdio,
tests/memories/test_mcp_tools.py in process)."""

from __future__ import annotations

from typing import Any


async def ok(client, tool: str, **arguments) -> dict[str, Any]:
    """The tool's structured answer; fails the test with the tool's error text."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text
    return result.structured_content


async def refused(client, tool: str, **arguments) -> str:
    """The text of the tool's error; fails the test if the call succeeded."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, result.structured_content
    return result.content[0].text
