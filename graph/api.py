"""What the doors (HTTP server, CLI, MCP) use of the engine besides the graphs themselves.

The server imports the engine through ``graph/`` only (its composition root,
``server/bootstrap.py``, is the one exception): the admission rule, the people a source
knows, a live connector's sync, the errors a door turns into messages, and the events and
their fold. Importing this module is cheap (no models, no LangGraph), so the CLI can check
input before loading them.
"""

from pathlib import Path

from seekgraph.nodes.plumbing.admission import Admission, AdmissionError, admit, check_question
from seekgraph.sources.base import User
from seekgraph.sources.connectors.connector import ConnectorError, connector_state, sync_connector
from seekgraph.sources.errors import UnknownSourceError, UnknownUserError, WorkspaceError
from seekgraph.sources.registry import MAX_SOURCES
from seekgraph.state.events import ANSWER_KEYS, checkpoint_events, empty_fold, fold_event
from seekgraph.state.models import KIND_LABELS, ImageRef, conflict_lines
from seekgraph.state.plans import PlanError, checked_plan

__all__ = [
    "MAX_SOURCES",
    "ANSWER_KEYS",
    "KIND_LABELS",
    "Admission",
    "AdmissionError",
    "ConnectorError",
    "ImageRef",
    "PlanError",
    "UnknownSourceError",
    "UnknownUserError",
    "User",
    "WorkspaceError",
    "admit",
    "check_question",
    "checked_plan",
    "checkpoint_events",
    "conflict_lines",
    "connector_state",
    "empty_fold",
    "fold_event",
    "sync_connector",
    "workspace_users",
]


def workspace_users(chosen: Path | None) -> list[str]:
    """The users the workspace in use lists (``chosen``, else the bundled demo).

    Read without indexing anything: the CLI refuses an unknown user before it loads the graph.
    """
    from seekgraph.sources.ingestion.workspace import user_names, workspace_folder

    return user_names(workspace_folder(chosen))
