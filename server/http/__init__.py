"""Every door over HTTP: the FastAPI app, its routes, SSE, the OpenAI, MCP and LangGraph doors."""
