"""The data files the installed product reads, shipped inside the package (wheel) as package data.

The files stay where people look for them in the source tree (``schemas/``, ``firmware_configs/profiles/``,
``firmware_configs/mosquitto/``); this package holds links to those folders, and building the wheel copies
the files themselves in. Code finds them through :func:`data_path` (``importlib.resources``), never through
a path relative to the checkout, so an installed ``tablectl`` works from any directory.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def data_path(*parts: str) -> Path:
    """Path of a shipped data file or folder, e.g. ``data_path("schemas", "mqtt")``."""
    resource = files(__name__).joinpath(*parts)
    if not isinstance(resource, Path):  # a zipped install: the schemas are globbed and read as files
        raise RuntimeError(f"controller is installed as a zip ({resource}); install it as files (pip)")
    return resource


SCHEMAS_DIR = data_path("schemas")
PROFILES_DIR = data_path("profiles")
MOSQUITTO_DIR = data_path("mosquitto")
