"""Drives the mcp_server example with the python `mcp` SDK's Client (pinned in
requirements.txt), over stdio or Streamable HTTP, in one connect mode:

  python mcp_client.py stdio PATH/TO/mcp_server MODE
  python mcp_client.py http http://127.0.0.1:PORT/mcp MODE

MODE is `auto` (probes server/discover, falls back to initialize), `2026-07-28` (pinned: every
request stateless) or `legacy` (initialize only). Exits 0 when every step behaved, 1 with the
reason otherwise.
"""

import asyncio
import sys

from mcp import Client
from mcp.client.stdio import StdioServerParameters

LIMIT_S = 20
EXPECTED = {"auto": "2026-07-28", "2026-07-28": "2026-07-28", "legacy": "2025-11-25"}


async def main(kind: str, target: str, mode: str) -> None:
    server = StdioServerParameters(command=target, args=[]) if kind == "stdio" else target
    async with Client(server, mode=mode) as client:
        assert client.protocol_version == EXPECTED[mode], client.protocol_version
        if mode != "2026-07-28":
            # Pinned, the client asks nothing before its first request; else it learnt this.
            assert client.server_info is not None and client.server_info.name == "jrpc-mcp-example", client.server_info
        tools = await client.list_tools()
        assert [tool.name for tool in tools.tools] == ["add", "count"], tools
        added = await client.call_tool("add", {"a": 2, "b": 3})
        assert not added.is_error and added.content[0].text == "5", added
        bad = await client.call_tool("add", {"a": "two", "b": 3})
        assert bad.is_error, bad
        seen = []

        async def progress(done: float, total: float | None, message: str | None) -> None:
            seen.append((done, total))

        counted = await client.call_tool("count", {"n": 3}, progress_callback=progress)
        assert counted.content[0].text == "3", counted
        assert seen == [(1, 3), (2, 3), (3, 3)], seen
    print(f"mcp python interop ({kind}, {mode}): ok")


if __name__ == "__main__":
    try:
        asyncio.run(asyncio.wait_for(main(sys.argv[1], sys.argv[2], sys.argv[3]), LIMIT_S))
    except BaseException as err:  # noqa: BLE001 - any failure is reported the same way
        print(f"mcp python interop ({sys.argv[1:]}): FAILED: {err!r}", file=sys.stderr)
        sys.exit(1)
