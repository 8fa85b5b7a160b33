"""External agent CLIs under the SGR-Bench protocol: an MCP server over an episode, a runner."""
