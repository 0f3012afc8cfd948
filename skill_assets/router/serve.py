"""The router as an MCP server (the official ``mcp`` SDK): one tool, ``route_skills(query, top_k)``.

An agent connects over stdio (the server is its subprocess) or streamable HTTP on 127.0.0.1, and
gets the same fields as a ``skill-assets route`` run line: ``{"id", "ranking": [{"skill_id",
"score", "signals"}], "selected"}``, plus each ranked skill's name and description so the agent
can decide without reading the files. The pool is indexed once, before the server accepts a call.
"""
from __future__ import annotations

from typing import Any

from skill_assets.router.routing import Router

SERVER_NAME = "skill-assets-router"
MAX_TOP_K = 50


def build_server(router: Router, name: str = SERVER_NAME):
    """An ``MCPServer`` whose ``route_skills`` tool routes over ``router``'s indexed pool."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer(name, instructions="Call route_skills with the user's request to learn which skills to "
                                          "load: 'selected' lists them best first; 'ranking' shows the runners-up.")
    skills = router.skill_by_id

    @server.tool()
    def route_skills(query: str, top_k: int = 10) -> dict[str, Any]:
        """Rank the skill pool for a request and say which skills to load ('selected', 1 to 3)."""
        if not query.strip():
            raise ValueError("query is empty")
        if not 1 <= top_k <= MAX_TOP_K:
            raise ValueError(f"top_k must be between 1 and {MAX_TOP_K}")
        routed = router.route_requests([query], top_k=top_k)[0].as_dict("query")
        for entry in routed["ranking"]:
            skill = skills[entry["skill_id"]]
            entry["name"], entry["description"] = skill.name, skill.description
        return routed

    return server


def serve(router: Router, transport: str = "stdio", port: int = 8765) -> None:
    """Block serving ``router``: ``stdio`` or ``http`` (streamable HTTP at http://127.0.0.1:<port>/mcp)."""
    server = build_server(router)
    if transport == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=port)
