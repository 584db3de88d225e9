"""`sessdex mcp`: past sessions and prompts as Model Context Protocol tools a coding agent can call.

`tools` answers each tool from one open session source (plain Python, no SDK: the benchmark and the server share
it); `server` declares the tools to the MCP SDK and runs them over stdio or streamable HTTP; `client_config`
prints the snippet each client's configuration needs.
"""
