"""What every ``seekgraph`` command shares: its error type and its settings."""

from __future__ import annotations

import argparse
from pathlib import Path

from server.settings import Settings


class CliError(Exception):
    """A problem the person can fix; printed as one line, exit code 2."""


def settings_of(args: argparse.Namespace) -> Settings:
    """Settings from the environment, with the command's ``--workspace`` when given."""
    settings = Settings()
    if getattr(args, "workspace", None):
        settings = settings.model_copy(update={"workspace": Path(args.workspace)})
    return settings
