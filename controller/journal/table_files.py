"""Where a table's configuration puts its journal and its audit key: the journal the service opens
(``<state_dir>/journal.db``) and the key it signs the checkpoints with (``[audit] key_file``, default
``<state_dir>/audit_key.pem``). One definition for the service (controller/service/resources.py,
controller/service/software.py), `tablectl status` and `tablectl journal archive|prune --config`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from controller.audit import keys

if TYPE_CHECKING:  # annotations only: the configuration package imports the rules and the schema
    from controller.config.model import TableConfig

JOURNAL_FILE = "journal.db"  # in the table's state_dir


def journal_file(state_dir: str | os.PathLike[str]) -> Path:
    """The journal the service opens in ``state_dir``."""
    return Path(state_dir) / JOURNAL_FILE


def audit_key_file(config: TableConfig) -> Path:
    """The table's audit key: ``[audit] key_file``, default ``<state_dir>/audit_key.pem``."""
    return config.audit.key_file if config.audit else keys.default_key_path(config.table.state_dir)
