"""Table configuration: ``load_config(path) -> TableConfig`` and the integrity manifest (``integrity``)."""

from controller.config.endpoint import TlsConfig
from controller.config.errors import ConfigError, Problem
from controller.config.load import load_config
from controller.config.model import (
    AlertsConfig,
    DisplayConfig,
    GpioBackend,
    GpioConfig,
    JackpotSection,
    MqttConfig,
    PinConfig,
    ReaderConfig,
    ShoeConfig,
    ShoeMode,
    SupervisorsConfig,
    TableConfig,
    TableSection,
)

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
