"""What every tier shares: where the checkout is, and the demo workspace's restricted text."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

#: Text that only the security group may see in the demo workspace.
RESTRICTED_MARKERS = [
    "orchid-42",
    "nightjar-pentest",
    "security-review",
    "security/m006",
    "HSM-2",
    "fleet-stg",
    "Nightjar update",
    "unsigned firmware",
    "retest is booked",
]
