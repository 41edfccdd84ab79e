"""Table configuration: ``load_config(path) -> TableConfig`` and the integrity manifest (``integrity``)."""

from controller.config.endpoint import TlsConfig
from controller.config.errors import ConfigError, Problem
from controller.config.keys import ShoeMode
from controller.config.load import load_config
from controller.config.model import (
    AlertsConfig,
    DisplayConfig,
    GpioConfig,
    MqttConfig,
    PinConfig,
    ReaderConfig,
    ShoeConfig,
    SupervisorsConfig,
    TableConfig,
    TableSection,
)
from controller.gpio.base import GpioBackend
from controller.jackpot.config import JackpotSection

__all__ = [
    "AlertsConfig",
    "ConfigError",
    "DisplayConfig",
    "GpioBackend",
    "GpioConfig",
    "JackpotSection",
    "MqttConfig",
    "PinConfig",
    "Problem",
    "ReaderConfig",
    "ShoeConfig",
    "ShoeMode",
    "SupervisorsConfig",
    "TableConfig",
    "TableSection",
    "TlsConfig",
    "load_config",
]
