"""Process settings, from the environment (``SEEKGRAPH_*``), a ``.env`` file or secret files."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from platformdirs import user_data_path
from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """Where data lives, which workspace to open, and which chat model to use (if any)."""

    model_config = SettingsConfigDict(
        env_prefix="SEEKGRAPH_",
        env_file=".env",
        extra="ignore",
        # a file per secret (Docker/Kubernetes secrets): <dir>/seekgraph_slack_token, …
        secrets_dir=os.environ.get("SEEKGRAPH_SECRETS_DIR") or None,
    )

    data_dir: Path = Field(
        default_factory=lambda: user_data_path("seekgraph"),
        description="Indexes and checkpoints live here.",
    )
    workspace: Path | None = Field(
        default=None, description="Workspace folder (workspace.json); the bundled demo if unset."
    )
    user: str | None = Field(default=None, description="Default user for the CLI.")
    llm_base_url: str | None = Field(
        default=None, description="OpenAI-compatible endpoint, e.g. http://localhost:11434/v1."
    )
    llm_api_key: SecretStr | None = Field(default=None, description="API key of the endpoint.")
    llm_model: str | None = Field(
        default=None, description="Chat model name; unset means extractive mode (no LLM)."
    )
    llm_timeout: float = Field(
        default=60.0, gt=0, description="Longest silence, in seconds, between a reply's tokens."
    )
    llm_first_token_timeout: float | None = Field(
        default=None,
        gt=0,
        description="Seconds to wait for a reply's first token — a slow local model reads the "
        "prompt first — and for a reply that is not streamed, all of it (unset: "
        "SEEKGRAPH_LLM_TIMEOUT).",
    )
    llm_connect_timeout: float = Field(
        default=10.0, gt=0, description="Seconds to connect to the model endpoint."
    )
    llm_json_mode: str = Field(
        default="prompt",
        pattern="^(prompt|json_object|json_schema)$",
        description="How structured replies are asked for: prompt (format instructions, any "
        "server), json_object (with the schema: llama.cpp, vLLM, Ollama) or json_schema "
        "(OpenAI structured outputs).",
    )
    llm_max_tokens: int = Field(
        default=1024, ge=16, le=200_000, description="Longest reply, in tokens, asked of a model."
    )
    llm_temperature: float | None = Field(
        default=0.0,
        ge=0,
        le=2,
        description="Sampling temperature of every model call: 0 (the default) answers from the "
        "sources the same way each time (llama.cpp's server samples at 0.8 when none is sent); "
        "none sends none, for models that take only their own (OpenAI's reasoning models).",
    )

    @field_validator("llm_temperature", mode="before")
    @classmethod
    def _no_temperature(cls, value: object) -> object:
        """``none`` (or an empty value) sends no temperature."""
        if isinstance(value, str) and value.strip().lower() in ("", "none"):
            return None
        return value

    backup_llm_model: str | None = Field(
        default=None, description="Backup chat model, used for a call when the primary fails."
    )
    backup_llm_base_url: str | None = Field(
        default=None, description="Backup endpoint (defaults to the primary's)."
    )
    backup_llm_api_key: SecretStr | None = Field(
        default=None, description="Backup endpoint key (defaults to the primary's)."
    )
    vision_llm_model: str | None = Field(
        default=None,
        description="Model used whenever the thread holds an image (same endpoint as the primary).",
    )
    cohere_api_key: SecretStr | None = Field(
        default=None, description="Cohere API key: enables Cohere reranking."
    )
    cohere_base_url: str | None = Field(
        default=None, description="Cohere-compatible endpoint (defaults to Cohere's)."
    )
    cohere_rerank_model: str = Field(default="rerank-v3.5", description="Cohere rerank model.")
    cohere_timeout: float = Field(default=10.0, description="Seconds per Cohere rerank call.")
    redis_url: str | None = Field(
        default=None,
        description="Redis 8 / Redis Stack URL for checkpoints, locks and routing; unset means "
        "one instance on SQLite checkpoints.",
    )
    embedding_model: str = Field(
        default="minilm",
        pattern="^(minilm|e5)$",
        description="Embedding model of the index: minilm (all-MiniLM-L6-v2 int8, English, "
        "~23 abstracts/s) or e5 (multilingual-e5-small, Chinese too, ~4 abstracts/s).",
    )
    embedding_threads: int | None = Field(
        default=None,
        ge=1,
        le=256,
        description="CPU threads per embedding call (unset: every core); 1 lets several "
        "`seekgraph worker` processes share a machine's cores without contention.",
    )
    index_backend: str = Field(
        default="sqlite",
        pattern="^(sqlite|redis)$",
        description="Where the workspace index lives: sqlite (embedded) or redis "
        "(RediSearch; shared by every instance; needs SEEKGRAPH_REDIS_URL).",
    )
    api_keys_file: Path | None = Field(
        default=None, description="JSON file mapping SHA-256 of API keys to user names."
    )
    instance_url: str | None = Field(
        default=None,
        description="This instance's base URL as other instances reach it (for forwarding).",
    )
    internal_token: SecretStr | None = Field(
        default=None, description="Shared secret instances use to forward streams to each other."
    )
    max_question_chars: int = Field(default=4000, description="Longest question accepted.")
    max_images: int = Field(default=6, description="Most images per question.")
    max_image_bytes: int = Field(default=5_000_000, description="Largest image accepted, bytes.")
    max_thread_image_bytes: int = Field(
        default=30_000_000, description="Most image bytes one thread may hold, all turns together."
    )
    max_request_bytes: int = Field(
        default=48 * 1024 * 1024,
        description="Largest request body, bytes (413 past it, before the key is checked); "
        "fits a question with the most images allowed.",
    )
    max_office_xml_mb: int = Field(
        default=10,
        ge=1,
        description="Megabytes of XML a .docx, .pptx or .xlsx may expand to (read from the "
        "zip's directory before it is parsed; past it the file is skipped, and said so).",
    )
    max_office_members: int = Field(
        default=10_000, ge=1, description="Parts a .docx, .pptx or .xlsx may hold (else skipped)."
    )
    max_export_unzipped_mb: int = Field(
        default=4096,
        ge=1,
        description="Megabytes an export zip (Slack, Notion, Confluence) read in place may "
        "expand to (refused past it: extract it and index the folder).",
    )
    max_export_members: int = Field(
        default=200_000, ge=1, description="Files an export zip read in place may hold."
    )
    max_json_containers: int = Field(
        default=20_000,
        ge=100,
        description="Objects and arrays a JSON body over 1 MiB may hold, counted before it is "
        "parsed (413 past it; a question with images holds a few dozen).",
    )
    header_timeout_seconds: float = Field(
        default=10.0, description="A request's head must arrive within this (`seekgraph serve`)."
    )
    body_timeout_seconds: float = Field(
        default=30.0, description="408 when a request body stops arriving for this long."
    )
    request_timeout_seconds: float = Field(
        default=60.0,
        gt=0,
        description="A whole request (head and body) must arrive within this, however it "
        "trickles (408, or the connection is closed).",
    )
    max_connections: int = Field(
        default=512, ge=1, description="Connections `seekgraph serve` holds at once (503 past it)."
    )
    shutdown_grace_seconds: int = Field(
        default=15,
        description="On SIGTERM, live runs get this long to stop at a saved step (`serve`).",
    )
    max_live_runs_per_key: int = Field(
        default=8, ge=1, description="Runs one API key may have live at once (429 past it)."
    )
    max_queued_runs_per_key: int = Field(
        default=16,
        ge=0,
        description="Runs one API key may have waiting for a busy thread (the enqueue, "
        "interrupt and rollback strategies), counted from when they are accepted (429 past it).",
    )
    max_waiting_runs_per_thread: int = Field(
        default=4, ge=0, description="Runs that may wait for one thread at once (429 past it)."
    )
    max_image_pixels_per_request: int = Field(
        default=50_000_000,
        ge=1,
        description="Pixels all the images of one request may have together, read from their "
        "headers before anything is decoded (422 past it; a 4K screenshot has 8.3 million).",
    )
    max_decoding_pixels_per_key: int = Field(
        default=50_000_000,
        ge=1,
        description="Pixels one API key's requests may have being decoded at once, across its "
        "requests on this instance (429 past it).",
    )
    rate_limit_per_minute: int = Field(
        default=600,
        ge=1,
        description="Requests one API key may make in any 60 seconds, across every instance on "
        "one Redis (429 past it, with Retry-After).",
    )
    daily_tokens_per_user: int | None = Field(
        default=None,
        ge=1,
        description="Model tokens one user may spend a day (UTC); a run is refused when they "
        "are spent and cut (answered with what it has) when it would pass them. Unset: no limit.",
    )
    model_prices: str | None = Field(
        default=None,
        description='Estimated price per million tokens by model, JSON: {"gpt-4.1": 5.0}; '
        "runs, users and the metrics report cost with it.",
    )
    audit_retention_days: int = Field(
        default=365,
        ge=1,
        description="How long audit entries are kept (apart from threads: longer by default).",
    )
    trace_content: bool = Field(
        default=False,
        description="Put queries in trace spans (off: spans carry ids and counts only).",
    )
    searxng_url: str | None = Field(
        default=None,
        description="A SearxNG instance's base URL (JSON format enabled): turns the web on.",
    )
    web_engine: Literal["searxng", "brave"] | None = Field(
        default=None,
        description="Which web search API to use (default: searxng when SEEKGRAPH_SEARXNG_URL "
        "is set, brave when SEEKGRAPH_BRAVE_API_KEY is).",
    )
    brave_api_key: SecretStr | None = Field(
        default=None, description="Brave Search API subscription token: turns the web on."
    )
    brave_base_url: str | None = Field(
        default=None, description="Brave-compatible endpoint (defaults to Brave's)."
    )
    web_allow_hosts: str = Field(
        default="",
        description="Comma-separated host names pages may be read from although they resolve "
        "to private or loopback addresses (an intranet). Nothing else private is ever read.",
    )
    web_allow_domains: str = Field(
        default="", description="Comma-separated domains: when set, only these are read."
    )
    web_deny_domains: str = Field(default="", description="Comma-separated domains never read.")
    web_timeout: float = Field(default=10.0, description="Seconds per web page (a time cap).")
    web_max_page_bytes: int = Field(
        default=2_000_000, description="Bytes read of one web page (the rest is cut)."
    )
    web_requests_per_second: float = Field(
        default=1.0, gt=0, description="Requests a second to the web search API."
    )
    web_obey_robots: bool = Field(default=True, description="Honour robots.txt (RFC 9309).")
    slack_token: SecretStr | None = Field(
        default=None,
        description="A Slack bot token (xoxb-…): adds the live `slack` source, synced with "
        "`seekgraph sync` and by the server every SEEKGRAPH_CONNECTOR_SYNC_MINUTES.",
    )
    slack_base_url: str | None = Field(
        default=None, description="Slack Web API base URL (defaults to Slack's)."
    )
    confluence_url: str | None = Field(
        default=None,
        description="A Confluence Cloud site (https://example.atlassian.net): with "
        "SEEKGRAPH_CONFLUENCE_USER and SEEKGRAPH_CONFLUENCE_TOKEN adds the live `confluence` "
        "source (pages, attachments, space permissions and page restrictions).",
    )
    confluence_user: str | None = Field(
        default=None, description="The Confluence account's e-mail (the API token's owner)."
    )
    confluence_token: SecretStr | None = Field(
        default=None, description="A Confluence API token of SEEKGRAPH_CONFLUENCE_USER."
    )
    confluence_spaces: str = Field(
        default="", description="Comma-separated space keys to sync (empty: every space)."
    )
    gdrive_credentials: str | None = Field(
        default=None,
        description="A Google service account key file: adds the live `gdrive` source (files "
        "and their sharing; scopes drive.readonly and admin.directory.group.member.readonly).",
    )
    gdrive_subject: str | None = Field(
        default=None,
        description="The Google Workspace user the service account acts as (domain-wide "
        "delegation: whose Drive is read, and who may read group members).",
    )
    gdrive_token: SecretStr | None = Field(
        default=None, description="An OAuth access token for Drive instead of a key file."
    )
    gdrive_base_url: str | None = Field(
        default=None, description="Google APIs base URL (defaults to Google's)."
    )
    feishu_app_id: str | None = Field(
        default=None,
        description="A Feishu/Lark app id: with SEEKGRAPH_FEISHU_APP_SECRET adds the live "
        "`feishu-docs`, `feishu-chat` and `feishu-minutes` sources.",
    )
    feishu_app_secret: SecretStr | None = Field(
        default=None, description="The Feishu/Lark app's secret."
    )
    feishu_folders: str = Field(
        default="",
        description="Comma-separated Feishu folder tokens whose documents are synced (empty: "
        "the app's own root folder).",
    )
    feishu_base_url: str | None = Field(
        default=None,
        description="Feishu Open API base URL (https://open.feishu.cn; Lark: "
        "https://open.larksuite.com).",
    )
    connector_sync_minutes: float = Field(
        default=5.0,
        gt=0,
        description="How often the server syncs live connectors (documents, deletions, "
        "permissions); a permission change in the source takes effect within it.",
    )
    heartbeat_seconds: float = Field(default=10.0, description="SSE heartbeat comment interval.")
    openai_thinking: Literal["reasoning", "think", "none"] = Field(
        default="reasoning",
        description="How /v1/chat/completions shows progress: reasoning (reasoning_content "
        "deltas), think (<think> text in the content, for clients that only show content), "
        "or none.",
    )
    lock_ttl_ms: int = Field(
        default=30_000,
        description="Run lock expiry; a keeper thread refreshes it every third of it.",
    )
    worker: bool = Field(
        default=True,
        description="Run an in-process worker beside the HTTP doors (`seekgraph serve`); "
        "false for an API-only instance whose runs go to `seekgraph worker` processes.",
    )
    queue: str = Field(
        default="seekgraph:runq",
        max_length=200,
        description="The Redis stream that holds the run queue; deployments that share one "
        "Redis give each its own.",
    )
    ingest_queue: str = Field(
        default="seekgraph:ingestq",
        max_length=200,
        description="The Redis stream of embedding batches (`seekgraph index --detach`, "
        "connector syncs) that the workers take.",
    )
    webhook_secret: SecretStr | None = Field(
        default=None,
        description="Key of the HMAC-SHA256 signature on webhook deliveries "
        "(X-Seekgraph-Signature: t=<time>,v1=<hex>); unset: deliveries are not signed.",
    )
    webhook_allow_hosts: str = Field(
        default="",
        description="Comma-separated host names webhooks may reach although they are "
        "loopback or private (an intranet receiver); every other such address is refused.",
    )
    worker_concurrency: int = Field(
        default=4, ge=1, description="Runs one worker executes at once."
    )
    claim_idle_seconds: float = Field(
        default=15.0,
        gt=0,
        description="A queued run whose worker was silent this long is taken by another "
        "worker and continued from its last checkpoint.",
    )
    queued_lock_ttl_ms: int = Field(
        default=600_000,
        description="How long a thread stays reserved for a run waiting in the queue (it is "
        "passed to the worker that takes the run; kept while nobody else takes the thread).",
    )
    retention_minutes: float = Field(
        default=43_200,
        ge=0,
        description="How long a thread is kept after it was last read or continued, in "
        "minutes (default 43200: 30 days); then it goes with everything it made (checkpoints, "
        "events, run records, passages). 0 keeps every thread for ever. Redis only.",
    )

    @property
    def webhook_hosts(self) -> frozenset[str]:
        """``webhook_allow_hosts`` as a set of lower-case names."""
        return frozenset(
            h.strip().lower() for h in self.webhook_allow_hosts.split(",") if h.strip()
        )

    @property
    def checkpoint_path(self) -> Path:
        """The SQLite file holding the CLI's checkpoints."""
        return self.data_dir / "checkpoints.sqlite"
