"""Errors about sources and workspaces that callers catch (importing this costs nothing)."""


class UnknownSourceError(KeyError):
    """A source name that is not registered."""


class UnknownUserError(KeyError):
    """A user name the workspace does not know."""


class WorkspaceError(ValueError):
    """A workspace folder that cannot be used; the message says what to fix."""
