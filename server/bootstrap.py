"""Build the process-wide services (sources, embedder, reranker, chat model) from settings."""

from __future__ import annotations

import hashlib
from pathlib import Path

from nodes.services import Services
from providers.chat import ChatModelConfig, load_chat_model
from providers.embeddings import E5Embedder
from providers.rerank import LocalReranker
from server.settings import Settings
from sources.workspace import SyncReport, demo_workspace, open_workspace


def workspace_of(settings: Settings) -> Path:
    """The workspace folder in use."""
    return (settings.workspace or demo_workspace()).expanduser().resolve()


def index_path(settings: Settings, workspace: Path) -> Path:
    """One index file per workspace folder, under the data directory."""
    key = hashlib.sha256(str(workspace).encode()).hexdigest()[:16]
    return settings.data_dir / "indexes" / f"{key}.sqlite"


def build_services(settings: Settings) -> tuple[Services, SyncReport | None]:
    """Open (and sync) the workspace and load the configured models."""
    embedder = E5Embedder()
    workspace = workspace_of(settings)
    registry, report = open_workspace(workspace, index_path(settings, workspace), embedder)
    chat = None
    if settings.llm_model:
        chat = load_chat_model(
            ChatModelConfig(
                model=settings.llm_model,
                base_url=settings.llm_base_url,
                api_key=settings.llm_api_key.get_secret_value() if settings.llm_api_key else None,
                timeout=settings.llm_timeout,
            )
        )
    services = Services(
        registry=registry,
        embedder=embedder,
        reranker=LocalReranker(embedder),
        chat_model=chat,
        model_name=settings.llm_model,
    )
    return services, report
