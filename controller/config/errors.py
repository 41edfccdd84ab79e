"""Configuration errors naming the file, the key and the reason, so a technician can fix them unaided."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Problem:
    file: str
    key: str  # dotted, e.g. "shoe.baudrate"; "" for the whole file
    reason: str

    def __str__(self) -> str:
        where = f"{self.file}: {self.key}" if self.key else self.file
        return f"{where}: {self.reason}"


class ConfigError(ValueError):
    """One or more problems in a configuration; ``str()`` lists them one per line."""

    def __init__(self, problems: list[Problem]) -> None:
        if not problems:
            raise ValueError("ConfigError needs at least one problem")
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))

    @classmethod
    def one(cls, file: str | Path, key: str, reason: str) -> ConfigError:
        return cls([Problem(str(file), key, reason)])
