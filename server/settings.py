"""Process settings, from the environment (``SEEKGRAPH_*``) or a ``.env`` file."""

from __future__ import annotations

from pathlib import Path

from platformdirs import user_data_path
from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """Where data lives, which workspace to open, and which chat model to use (if any)."""

    model_config = SettingsConfigDict(env_prefix="SEEKGRAPH_", env_file=".env", extra="ignore")

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
    llm_timeout: float = Field(default=60.0, description="Seconds per model call.")

    @property
    def checkpoint_path(self) -> Path:
        """The SQLite file holding the CLI's checkpoints."""
        return self.data_dir / "checkpoints.sqlite"
