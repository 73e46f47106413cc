"""Files, exports and workspaces read into indexed documents.

The parsers (Office, mail, chats, transcripts, Markdown, exports), chunks and their ACLs, who
can read what was indexed, and ingestion as jobs on a queue.
"""
