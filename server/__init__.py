"""Every way into seekgraph: settings, the CLI, LangGraph Studio (and later the HTTP server)."""
