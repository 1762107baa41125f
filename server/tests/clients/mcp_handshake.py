"""MCP handshake with kip-server through the Python `mcp` package's clients.

    python mcp_handshake.py stdio KIP_SERVER_BINARY DATABASE_URL SPACE
    python mcp_handshake.py http  http://127.0.0.1:PORT/mcp

initialize -> tools/list -> tools/call execute_kip with DESCRIBE PRIMER must
return the KIP envelope; a KIP error must come back as a tool error with the
envelope inside. Results are read in their wire form (model_dump by alias),
which is the same across versions of the package. Exits non-zero on failure.
"""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def wire(model):
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


async def exercise(read, write, label):
    async with ClientSession(read, write) as session:
        init = wire(await session.initialize())
        assert init["serverInfo"]["name"] == "kip-server", init
        assert "DESCRIBE PRIMER" in init.get("instructions", ""), "instructions missing"

        tools = wire(await session.list_tools())["tools"]
        names = [t["name"] for t in tools]
        assert {"execute_kip", "execute_kip_readonly"} <= set(names), names
        schema = next(t for t in tools if t["name"] == "execute_kip")["inputSchema"]
        assert {"command", "commands", "parameters", "dry_run"} <= set(schema["properties"]), schema

        result = wire(await session.call_tool("execute_kip", {"command": "DESCRIBE PRIMER"}))
        assert not result.get("isError"), result
        envelope = json.loads(result["content"][0]["text"])
        assert "identity" in envelope["result"] and "domain_map" in envelope["result"], envelope

        failed = wire(await session.call_tool("execute_kip", {"command": "FIND("}))
        assert failed.get("isError") is True, failed
        assert "KIP_1001" in failed["content"][0]["text"], failed

        read_only = wire(await session.call_tool("execute_kip_readonly", {"command": "DESCRIBE PRIMER"}))
        assert not read_only.get("isError"), read_only
    print(f"{label}: initialize, tools/list ({', '.join(names)}), tools/call execute_kip DESCRIBE PRIMER: ok")


async def over_stdio(binary, database_url, space):
    params = StdioServerParameters(
        command=binary,
        args=["mcp", "--space", space],
        env={"DATABASE_URL": database_url, "RUST_LOG": "warn"},
    )
    async with stdio_client(params) as streams:
        await exercise(streams[0], streams[1], "MCP over stdio (python mcp client)")


async def over_http(url):
    try:
        from mcp.client.streamable_http import streamable_http_client as connect
    except ImportError:  # the 1.x name
        from mcp.client.streamable_http import streamablehttp_client as connect
    async with connect(url) as streams:
        await exercise(streams[0], streams[1], "MCP over streamable HTTP (python mcp client)")


def main():
    mode = sys.argv[1]
    if mode == "stdio":
        asyncio.run(over_stdio(sys.argv[2], sys.argv[3], sys.argv[4]))
    elif mode == "http":
        asyncio.run(over_http(sys.argv[2]))
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
