"""The embedded index's SQLite tables: documents, chunks, ACLs, vectors, FTS5, meta."""

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
