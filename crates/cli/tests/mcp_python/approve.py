"""An MCP client built with the official Python SDK that can ask its user
(elicitation): it runs the repl through `agentloop mcp`, follows the session
with `session_status` alone, and replies "yes" to every question it is asked,
keeping what it was shown. Prints one JSON line.

    python3 approve.py MODE FOLDER AGENTLOOP [ARGS...]

MODE is "legacy" (the initialize handshake: the server asks in the middle of
a call) or "auto" (the newest protocol: the server asks by returning
`input_required`, and the SDK calls again with the reply).
"""

import asyncio
import json
import sys

import mcp_types as types
from mcp import Client, StdioServerParameters


async def main() -> None:
    mode, folder, command, args = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    asked = []

    async def elicit(context, params):
        asked.append(params.model_dump(mode="json", by_alias=True, exclude_none=True))
        return types.ElicitResult(action="accept", content={"reply": "yes"})

    server = StdioServerParameters(command=command, args=args + ["mcp"])
    async with Client(server, mode=mode, elicitation_callback=elicit) as client:
        started = await client.call_tool("run_agent", {"agent": "repl", "input": {"prompt": "use the tool", "folder": folder}})
        session_id = started.structured_content["sessionId"]
        status = {}
        for _ in range(30):
            status = (await client.call_tool("session_status", {"sessionId": session_id, "wait_s": 5})).structured_content
            if status["status"] in ("completed", "error", "terminated") or status.get("pendingQuestion"):
                break
        print(json.dumps({"protocol": client.protocol_version, "asked": asked, "status": status}))


asyncio.run(main())
