"""The table's command line, one module per subcommand (``add_arguments``/``main``), registered by ``tablectl``
(controller/cli/tablectl.py). Nothing below this layer imports it (docs/architecture.md)."""

from controller.cli.tablectl import main

__all__ = ["main"]
