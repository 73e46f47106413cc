"""Live systems read as they are now, and a remote search service.

Slack, Confluence, Google Drive and Feishu synced into an index with their permissions
(``connector``); an existing search service queried over HTTP (``http``).
"""
