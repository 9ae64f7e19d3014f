"""Drives mcp_everything over Streamable HTTP with the python `mcp` SDK's Client (pinned in
requirements.txt), in one era, alone or behind a balancer:

  python mcp_everything_client.py http://HOST:PORT/mcp MODE

MODE is `legacy` (initialize, a session) or `2026-07-28` (stateless). Each call is made several
times, so that a round-robin balancer sends them to every replica: a plain tool, one reporting
progress, one asking the user (an elicitation: on the call's stream in the legacy era, with the
client's answer posted back; a retry with the answer in the modern era). Exits 0 when every step
behaved, 1 with the reason otherwise.
"""

import asyncio
import sys

from mcp import Client, types

LIMIT_S = 60
ROUNDS = 3
EXPECTED = {"legacy": "2025-11-25", "2026-07-28": "2026-07-28"}


async def elicit(context, params):
    return types.ElicitResult(action="accept", content={"response": "ok"})


async def main(url: str, mode: str) -> None:
    async with Client(url, mode=mode, elicitation_callback=elicit) as client:
        assert client.protocol_version == EXPECTED[mode], client.protocol_version
        tools = await client.list_tools()
        names = [tool.name for tool in tools.tools]
        assert "test_simple_text" in names and "test_elicitation" in names, names
        for _ in range(ROUNDS):
            simple = await client.call_tool("test_simple_text", {})
            assert simple.content[0].text == "This is a simple text response for testing.", simple
        for _ in range(ROUNDS):
            seen = []

            async def progress(done: float, total: float | None, message: str | None) -> None:
                seen.append(done)

            await client.call_tool("test_tool_with_progress", {}, progress_callback=progress)
            assert seen == [0, 50, 100], seen
        for _ in range(ROUNDS):
            asked = await client.call_tool("test_elicitation", {"message": "Say ok"})
            text = asked.content[0].text
            assert text == 'User response: action=accept, content={"response":"ok"}', asked
    print(f"mcp python interop (mcp_everything, {mode}): ok")


if __name__ == "__main__":
    try:
        asyncio.run(asyncio.wait_for(main(sys.argv[1], sys.argv[2]), LIMIT_S))
    except BaseException as err:  # noqa: BLE001 - any failure is reported the same way
        print(f"mcp python interop ({sys.argv[1:]}): FAILED: {err!r}", file=sys.stderr)
        sys.exit(1)
