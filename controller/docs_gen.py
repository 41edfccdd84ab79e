"""Generate docs from code (state diagram, package layers, wiring, profile settings, the configuration's schemas,
example and key tables) and, with --check, fail when one is stale."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# output path (relative to the repo root) -> function returning the file's text
GENERATORS: dict[str, Callable[[], str]] = {}


def _register() -> None:
    from controller.config import keys_doc, keys_schema
    from controller.ops.wiring import render_example
    from controller.rules.profile_doc import render as render_profile_settings

    GENERATORS["docs/wiring.md"] = render_example
    GENERATORS["docs/profile-settings.md"] = render_profile_settings
    # the table configuration, from its key declarations (controller/config/keys.py)
    for name in keys_schema.schemas():
        GENERATORS[f"schemas/config/{name}"] = partial(keys_schema.render, name)
    GENERATORS[keys_doc.EXAMPLE] = keys_doc.render_example
    for doc in keys_doc.TABLE_DOCS:
        GENERATORS[doc] = partial(keys_doc.render_tables, ROOT, doc)
    if importlib.util.find_spec("grimp") is not None:  # development tooling, installed with import-linter
        from controller.layers_doc import render_doc

        GENERATORS["docs/architecture.md"] = render_doc
    try:
        from controller.table.diagram import render_mermaid_doc
    except ImportError:
        return
    GENERATORS["docs/state-machine.md"] = render_mermaid_doc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 if a generated file differs")
    args = parser.parse_args(argv)
    _register()
    stale = []
    for rel, make in GENERATORS.items():
        path = ROOT / rel
        text = make()
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(rel)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            print(f"wrote {rel}")
    if stale:
        print(
            "stale generated docs (run: python -m controller.docs_gen): " + ", ".join(stale), file=sys.stderr
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
