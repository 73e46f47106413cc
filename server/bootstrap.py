"""The composition root: services (sources, embedder, reranker, models) and graphs from settings.

The one place in ``server/`` that reaches below ``graph/``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langgraph.graph.state import CompiledStateGraph

from seekgraph.graph.flows import FLOWS
from seekgraph.nodes.plumbing.services import Services
from seekgraph.providers import pace
from seekgraph.providers.chat import (
    ChatModel,
    ChatModelConfig,
    aclose_chat_clients,
    load_chat_model,
)
from seekgraph.providers.cohere_rerank import CohereReranker
from seekgraph.providers.embeddings import Embedder, load_embedder
from seekgraph.providers.rerank import LocalReranker, Reranker
from seekgraph.server.images import load_image
from seekgraph.server.settings import Settings
from seekgraph.sources.connectors.connector import Connector, member_groups
from seekgraph.sources.indexes.embedded import EmbeddedIndex
from seekgraph.sources.indexes.index_source import EmbeddedSource
from seekgraph.sources.indexes.index_vectors import reranker_embedder
from seekgraph.sources.ingestion import archives
from seekgraph.sources.registry import SourceRegistry
from seekgraph.sources.web import WebSource, web_source
from seekgraph.sources.web.fetch import FetchPolicy, PageFetcher

if TYPE_CHECKING:
    from seekgraph.sources.indexes.redis_index import RedisIndex
from seekgraph.sources.ingestion.workspace import (
    SyncReport,
    WorkspaceError,
    demo_workspace,
    list_members,
    load_config,
    open_workspace,
    people_of,
    workspace_folder,
)


def workspace_of(settings: Settings) -> Path:
    """The workspace folder in use."""
    return workspace_folder(settings.workspace)


def index_path(settings: Settings, workspace: Path) -> Path:
    """One index file per workspace, under the data directory.

    The bundled demo has one name whatever the install (its folder moves with the virtual
    environment); another workspace is keyed by its folder. An index kept under the demo's
    old, path-keyed name is moved to the new one, with the sources added to it.
    """
    folder = settings.data_dir / "indexes"
    if workspace != demo_workspace().resolve():
        return folder / f"{_path_key(workspace)}.sqlite"
    path = folder / "demo.sqlite"
    legacy = folder / f"{_path_key(workspace)}.sqlite"
    if not path.exists() and legacy.exists():
        legacy.replace(path)
    return path


def _path_key(workspace: Path) -> str:
    return hashlib.sha256(str(workspace).encode()).hexdigest()[:16]


def configured_reranker(settings: Settings, local: Reranker) -> Reranker:
    """Cohere (or a Cohere-compatible server) when a key is set, falling back to ``local``."""
    if not settings.cohere_api_key:
        return local
    return CohereReranker(
        settings.cohere_api_key.get_secret_value(),
        fallback=local,
        model=settings.cohere_rerank_model,
        base_url=settings.cohere_base_url,
        timeout=settings.cohere_timeout,
    )


def _listed(value: str) -> frozenset[str]:
    return frozenset(v.strip().lower() for v in value.split(",") if v.strip())


def _names(value: str) -> list[str]:
    """A comma-separated setting's names, as written (space keys and tokens keep their case)."""
    return [v.strip() for v in value.split(",") if v.strip()]


def configured_web(settings: Settings, workspace: Path) -> WebSource | None:
    """The web source when a search API is configured; who may use it from workspace.json."""
    brave = settings.brave_api_key.get_secret_value() if settings.brave_api_key else None
    engine = settings.web_engine or (
        "searxng" if settings.searxng_url else "brave" if brave else None
    )
    if engine is None:
        return None
    users = load_config(workspace).get("web")
    if users is not None and (
        not isinstance(users, list) or not all(isinstance(u, str) for u in users)
    ):
        raise WorkspaceError(
            f"{workspace / 'workspace.json'}: 'web' must be a list of principals "
            '(e.g. ["group:everyone"] or ["user:alice", "group:research"])'
        )
    policy = FetchPolicy(
        allow_hosts=_listed(settings.web_allow_hosts),
        allow_domains=_listed(settings.web_allow_domains),
        deny_domains=_listed(settings.web_deny_domains),
        max_bytes=settings.web_max_page_bytes,
        timeout=settings.web_timeout,
        obey_robots=settings.web_obey_robots,
    )
    try:
        return web_source(
            engine=engine,
            searxng_url=settings.searxng_url,
            brave_api_key=brave,
            brave_base_url=settings.brave_base_url,
            users=users,
            fetcher=PageFetcher(policy),
            per_second=settings.web_requests_per_second,
        )
    except ValueError as exc:
        raise WorkspaceError(str(exc)) from None


def configured_connectors(settings: Settings, workspace: Path) -> list[Connector]:
    """The live connectors the settings turn on (Slack, Confluence, Google Drive, Feishu)."""
    out: list[Connector] = []
    people = people_of(load_config(workspace))
    if settings.slack_token is not None:
        from seekgraph.sources.connectors.slack import SlackConnector

        token = settings.slack_token.get_secret_value()
        out.append(SlackConnector(token, people, base_url=settings.slack_base_url))
    if settings.confluence_url:
        from seekgraph.sources.connectors.confluence import ConfluenceConnector

        if not settings.confluence_user or settings.confluence_token is None:
            raise WorkspaceError(
                "SEEKGRAPH_CONFLUENCE_URL needs SEEKGRAPH_CONFLUENCE_USER (the account's "
                "e-mail) and SEEKGRAPH_CONFLUENCE_TOKEN (its API token)"
            )
        out.append(
            ConfluenceConnector(
                settings.confluence_url,
                settings.confluence_user,
                settings.confluence_token.get_secret_value(),
                people,
                spaces=_names(settings.confluence_spaces),
            )
        )
    if settings.gdrive_credentials or settings.gdrive_token is not None:
        from seekgraph.sources.connectors.connector import ConnectorError
        from seekgraph.sources.connectors.drive import DriveConnector, drive_credentials

        access = settings.gdrive_token.get_secret_value() if settings.gdrive_token else None
        try:
            creds = drive_credentials(settings.gdrive_credentials, access, settings.gdrive_subject)
        except ConnectorError as exc:
            raise WorkspaceError(str(exc)) from None
        lists = list_members(load_config(workspace))  # a list's address: its members read
        out.append(DriveConnector(creds, people, base_url=settings.gdrive_base_url, lists=lists))
    if settings.feishu_app_id:
        from seekgraph.sources.connectors.feishu import feishu_connectors

        if settings.feishu_app_secret is None:
            raise WorkspaceError("SEEKGRAPH_FEISHU_APP_ID needs SEEKGRAPH_FEISHU_APP_SECRET")
        out += feishu_connectors(
            settings.feishu_app_id,
            settings.feishu_app_secret.get_secret_value(),
            people,
            folders=_names(settings.feishu_folders),
            base_url=settings.feishu_base_url,
        )
    return out


def connect(registry: SourceRegistry, connectors: list[Connector]) -> None:
    """Search each connector's documents in the workspace's index; resolve its groups."""
    if not connectors:
        return
    index = next(s.index for s in registry.select() if isinstance(s, EmbeddedSource))
    for connector in connectors:
        registry.add(EmbeddedSource(index, connector.name, connector.kind))
        registry.connectors.append((connector, index))
    names = [c.name for c in connectors]
    registry.memberships = lambda user: member_groups(index, names, user)


def shared_index(settings: Settings, workspace: Path, embedder: Embedder) -> RedisIndex | None:
    """The workspace's index on Redis when ``SEEKGRAPH_INDEX_BACKEND=redis`` (else None)."""
    if settings.index_backend != "redis":
        return None
    if not settings.redis_url:
        raise WorkspaceError("SEEKGRAPH_INDEX_BACKEND=redis needs SEEKGRAPH_REDIS_URL")
    from seekgraph.sources.indexes.redis_index import RedisIndex

    scope = hashlib.sha256(str(workspace).encode()).hexdigest()[:12]
    return RedisIndex(
        settings.redis_url, embedder, prefix=f"seekgraph:index:{scope}:{embedder.name}:"
    )


def open_index(settings: Settings, workspace: Path, embedder: Embedder) -> Any:
    """The workspace's index: on Redis, or the embedded SQLite file (``index_path``)."""
    shared = shared_index(settings, workspace, embedder)
    if shared is not None:
        return shared
    return EmbeddedIndex(index_path(settings, workspace), embedder)


def configured_chat(settings: Settings) -> tuple[ChatModel | None, ChatModel | None]:
    """The configured chat model (with its backup) and vision model; ``None`` when unset."""
    key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else None
    phases: dict[str, Any] = {
        "timeout": settings.llm_timeout,
        "first_token_timeout": settings.llm_first_token_timeout,
        "connect_timeout": settings.llm_connect_timeout,
        "json_mode": settings.llm_json_mode,
        "max_tokens": settings.llm_max_tokens,
        "temperature": settings.llm_temperature,
    }
    backup = None
    if settings.backup_llm_model:
        backup_key = settings.backup_llm_api_key
        backup = ChatModelConfig(
            model=settings.backup_llm_model,
            base_url=settings.backup_llm_base_url or settings.llm_base_url,
            api_key=backup_key.get_secret_value() if backup_key else key,
            **phases,
        )
    if not settings.llm_model:
        return None, None
    primary = ChatModelConfig(
        model=settings.llm_model, base_url=settings.llm_base_url, api_key=key, **phases
    )
    vision = None
    if settings.vision_llm_model:
        vision = load_chat_model(
            ChatModelConfig(
                model=settings.vision_llm_model,
                base_url=settings.llm_base_url,
                api_key=key,
                **phases,
            )
        )
    return load_chat_model(primary, backup), vision


def build_services(
    settings: Settings, progress: Callable[[str], None] | None = None
) -> tuple[Services, SyncReport | None]:
    """Open (and sync) the workspace and load the configured models.

    ``progress`` hears what indexing the workspace does, when it does any.
    """
    archives.LIMITS = archives.ZipLimits(
        export_mb=settings.max_export_unzipped_mb,
        export_members=settings.max_export_members,
        office_xml_mb=settings.max_office_xml_mb,
        office_members=settings.max_office_members,
    )
    embedder = load_embedder(settings.embedding_model, settings.embedding_threads)
    workspace = workspace_of(settings)
    shared = shared_index(settings, workspace, embedder)
    registry, report = open_workspace(
        workspace, index_path(settings, workspace), embedder, index=shared, progress=progress
    )
    web = configured_web(settings, workspace)
    if web is not None:
        registry.add(web)
    connect(registry, configured_connectors(settings, workspace))
    chat, vision = configured_chat(settings)
    if chat is not None:  # a slow model's measured pace outlives the process
        pace.keep_in(settings.data_dir / "model_pace.json")
    index = next(
        (
            s.index
            for s in registry.select()
            if isinstance(s, EmbeddedSource) and isinstance(s.index, EmbeddedIndex)
        ),
        None,
    )
    reranker = configured_reranker(settings, LocalReranker(reranker_embedder(embedder, index)))
    images_dir = settings.data_dir / "images"
    services = Services(
        registry=registry,
        embedder=embedder,
        reranker=reranker,
        chat_model=chat,
        model_name=settings.llm_model,
        vision_model=vision,
        vision_model_name=settings.vision_llm_model if vision is not None else None,
        image_loader=lambda user, ref: load_image(images_dir, user, ref),
        max_question_chars=settings.max_question_chars,
    )
    return services, report


def flow_graphs(
    services: Services, saver: Any
) -> dict[str, CompiledStateGraph[Any, Any, Any, Any]]:
    """Every flow over ``services``, checkpointed by ``saver``, by name."""
    return {name: flow.compile(services, saver) for name, flow in FLOWS.items()}


async def close_services(services: Services) -> None:
    """Close the models', the reranker's and the connectors' connection pools."""
    await aclose_chat_clients()
    close = getattr(services.reranker, "aclose", None)
    if close is not None:
        await close()
    for source in services.registry.select():
        if isinstance(source, WebSource):
            await source.aclose()
    for connector, _ in services.registry.connectors:
        close_connector = getattr(connector, "close", None)
        if close_connector is not None:
            close_connector()
