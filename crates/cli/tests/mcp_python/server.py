"""An MCP server built with the official Python SDK, for agentloop's client
to call: `shout` (a read) and `note` (appends a line to a file)."""

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("py-fixture")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def shout(text: str) -> str:
    """Returns the text in capitals."""
    return text.upper()


@server.tool()
def note(file: str, text: str) -> str:
    """Appends a line to a file and says how many lines it has."""
    with open(file, "a", encoding="utf-8") as f:
        f.write(text + "\n")
    with open(file, encoding="utf-8") as f:
        return str(sum(1 for _ in f))


if __name__ == "__main__":
    server.run()
