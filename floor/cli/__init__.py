"""The floor's command line, one module per ``tablectl floor <command>`` (``add_arguments``/``main``), registered
by floor/cli/tablectl.py."""
