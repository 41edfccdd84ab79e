"""The service's command intake at start-up: the supervisors' credentials (unreadable, or the old HMAC
format: one line, the outputs stay safe, exit 3), the command nonce store (a full or read-only disk: the
journal_io fault), the handler (``ServiceCommands``: commands.py) and the intake itself, started
(controller/mqtt/commands.py ``CommandIntake``)."""

from __future__ import annotations

from controller.config import TableConfig
from controller.journal import Journal
from controller.mqtt.alerts import AlertManager
from controller.mqtt.auth import Authenticator, AuthError, CredentialStore
from controller.mqtt.commands import CommandIntake
from controller.mqtt.link import MqttLink
from controller.service.commands import ServiceCommands
from controller.service.disk import DiskWatch
from controller.service.errors import StartupError
from controller.service.jackpot import JackpotWiring
from controller.service.resources import open_nonce_store
from controller.shell.controller import TableController
from controller.table.journal_io import JournalProblem


def start_command_intake(
    config: TableConfig,
    journal: Journal,
    table: TableController,
    alerts: AlertManager,
    link: MqttLink,
    *,
    jackpot: JackpotWiring | None,
    disk: DiskWatch | None,
    integrity_problems: list[str],
) -> tuple[ServiceCommands, CommandIntake, JournalProblem | None]:
    """The handler, the started intake and the nonce store's problem (None: it works)."""
    try:
        credentials = CredentialStore.load(config.supervisors.credentials_file)
    except AuthError as exc:
        raise StartupError(f"supervisor credentials: {exc}") from None
    nonces, nonce_problem = open_nonce_store(journal)
    auth = Authenticator(
        credentials,
        nonces,
        site=config.table.site,
        table=config.table.id,
        credentials_file=config.supervisors.credentials_file,
    )
    commands = ServiceCommands(config, journal, table, alerts, jackpot, integrity_problems)
    commands.disk = disk  # no new round on a nearly full journal disk
    intake = CommandIntake(handler=commands.handle, auth=auth, alerts=alerts, link=link)
    intake.start()
    return commands, intake, nonce_problem
