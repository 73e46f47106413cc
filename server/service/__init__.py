"""The run service: threads and runs as every door sees them, refusing with domain errors.

``run_service.RunService`` is the one implementation the doors (``server.http``: the native
API, the LangGraph protocol, the OpenAI-compatible chat, MCP) translate to; ``errors`` are its
refusals; ``streams`` and ``resume`` read a run's events wherever it runs. Nothing here knows
HTTP: the doors map the errors to their own shapes.
"""
