"""An MCP client built with the official Python SDK that drives
`agentloop mcp`: lists the agents, runs the repl on a question, follows
the session to its end and prints the last status as one JSON line.

    python3 client.py FOLDER AGENTLOOP [ARGS...]
"""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main() -> None:
    folder, command, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    params = StdioServerParameters(command=command, args=args + ["mcp"])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = sorted(t.name for t in (await session.list_tools()).tools)
            agents = (await session.call_tool("list_agents", {})).structured_content
            started = await session.call_tool(
                "run_agent", {"agent": "repl", "input": {"prompt": "shout something", "folder": folder}}
            )
            session_id = started.structured_content["sessionId"]
            status = {}
            for _ in range(30):
                status = (await session.call_tool("session_status", {"sessionId": session_id, "wait_s": 5})).structured_content
                if status["status"] in ("completed", "error", "terminated") or status.get("pendingQuestion"):
                    break
            print(json.dumps({"tools": tools, "agents": [a["name"] for a in agents["agents"]], "status": status}))


asyncio.run(main())
