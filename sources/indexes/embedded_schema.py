"""The embedded index's SQLite tables: documents, chunks, ACLs, vectors, FTS5, meta."""

import sqlite3
import time

from seekgraph.providers.terms import segmented
from seekgraph.sources.indexes.scoring import FIELD_WEIGHTS

SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    doc_id TEXT PRIMARY KEY, source TEXT NOT NULL, kind TEXT NOT NULL, title TEXT NOT NULL,
    text TEXT NOT NULL, url TEXT, updated_at TEXT, version TEXT,
    deprecated INTEGER NOT NULL DEFAULT 0, superseded_by TEXT,
    content_hash TEXT NOT NULL, origin TEXT
);
CREATE INDEX IF NOT EXISTS documents_source ON documents(source);
CREATE TABLE IF NOT EXISTS acl (
    doc_id TEXT NOT NULL, principal TEXT NOT NULL, PRIMARY KEY (doc_id, principal)
);
CREATE INDEX IF NOT EXISTS acl_principal ON acl(principal);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY, chunk_id TEXT UNIQUE NOT NULL, doc_id TEXT NOT NULL,
    ord INTEGER NOT NULL, heading TEXT NOT NULL DEFAULT '', text TEXT NOT NULL, vector BLOB,
    preceding TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS chunks_doc ON chunks(doc_id);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    title, heading, text, preceding, tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TABLE IF NOT EXISTS embedding_cache (
    content_hash TEXT NOT NULL, model TEXT NOT NULL, vector BLOB NOT NULL,
    PRIMARY KEY (content_hash, model)
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


def migrate(conn: sqlite3.Connection) -> None:
    """Create the tables, or bring a file written by an older version up to them (losing none).

    An FTS5 table cannot gain a column: it is rebuilt from the stored chunks.
    """
    conn.executescript(SCHEMA)
    columns = {r[1] for r in conn.execute("PRAGMA table_info(chunks)")}
    if "preceding" not in columns:  # before messages were indexed with the one before
        conn.execute("ALTER TABLE chunks ADD COLUMN preceding TEXT NOT NULL DEFAULT ''")
    if [r[1] for r in conn.execute("PRAGMA table_info(chunks_fts)")] == list(FIELD_WEIGHTS):
        return
    rows = conn.execute(
        "SELECT c.id, d.title, c.heading, c.text, c.preceding FROM chunks c"
        " JOIN documents d ON d.doc_id = c.doc_id"
    ).fetchall()
    with conn:
        conn.execute("DROP TABLE chunks_fts")
        conn.executescript(SCHEMA)
        conn.executemany(
            "INSERT INTO chunks_fts (rowid, title, heading, text, preceding) VALUES (?,?,?,?,?)",
            [(r[0], *(segmented(x) for x in r[1:])) for r in rows],
        )


def claim_lease(conn: sqlite3.Connection, key: str, owner: str, seconds: float) -> bool:
    """Take or renew the lease ``key`` (a meta row ``"<until> <owner>"``) in one statement."""
    now = time.time()
    conn.execute(
        "INSERT INTO meta VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value "
        "WHERE CAST(substr(meta.value, 1, instr(meta.value, ' ') - 1) AS REAL) < ? "
        "OR substr(meta.value, instr(meta.value, ' ') + 1) = ?",
        (f"lease:{key}", f"{now + seconds} {owner}", now, owner),
    )
    return bool(conn.execute("SELECT changes()").fetchone()[0])


def release_lease(conn: sqlite3.Connection, key: str, owner: str) -> None:
    """Delete the lease ``key`` if ``owner`` holds it."""
    conn.execute(
        "DELETE FROM meta WHERE key = ? AND substr(value, instr(value, ' ') + 1) = ?",
        (f"lease:{key}", owner),
    )
