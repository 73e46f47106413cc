"""Reaching addresses people give: the web fetcher's guard, for the server's own calls out.

A run's webhook is an address a person typed; it is called through the same guard as a web
page (no loopback, private, link-local or reserved address unless the operator names the
host), so a webhook cannot be pointed at the deployment's own network.
"""

from seekgraph.sources.web.fetch import FetchRefusedError, GuardedTransport, forbidden_address

__all__ = ["FetchRefusedError", "GuardedTransport", "forbidden_address"]
