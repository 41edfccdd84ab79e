"""The table service: ``table_service.TableService`` wires the parts and runs them; one module per concern beside
it (docs/architecture.md, "The service"). Started by `tablectl run` (controller/cli/run.py)."""
