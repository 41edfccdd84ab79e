"""The core emits domain effects (``Event``, ``StateDocument``); the shell's one mapping table
(controller/table/messages.py) decides their topics, and it covers the topic tree (docs/mqtt.md) exactly."""

from __future__ import annotations

import ast
from pathlib import Path

from controller.effects import DocumentName, Event, EventKind, StateDocument
from controller.table.messages import DOCUMENT_TOPICS, EVENT_TOPICS, message_of, messages
from controller.topics import EVENT_TYPES, STATE_NAMES, spec_for
from tablebench.table_testing import Harness

CORE = Path(__file__).parent.parent / "controller" / "table"
SHELL = {"controller.py", "messages.py", "journal_io.py", "__main__.py", "__init__.py", "testing.py"}


def test_every_event_kind_and_state_document_has_its_topic_and_nothing_more() -> None:
    assert {k.value for k in EventKind} == set(EVENT_TYPES)
    assert {n.value for n in DocumentName} == set(STATE_NAMES)
    for topic in [*EVENT_TOPICS.values(), *DOCUMENT_TOPICS.values()]:
        assert spec_for(topic) is not None, topic
    assert DOCUMENT_TOPICS[DocumentName.LID] == "state/lid"
    assert EVENT_TOPICS[EventKind.DEALER_ERROR] == "events/dealer_error"


def test_an_event_is_published_on_its_topic_and_a_state_document_retained_as_its_text() -> None:
    msg = message_of(Event(EventKind.CARD, {"code": "7H"}))
    assert (msg.topic, msg.event_type, msg.retain, msg.data) == ("events/card", "card", False, {"code": "7H"})
    doc = message_of(StateDocument(DocumentName.JAM, '{"jammed":false}'))
    assert (doc.topic, doc.event_type, doc.retain, doc.text) == (
        "state/jam",
        "state",
        True,
        '{"jammed":false}',
    )


def test_a_played_round_reaches_the_shell_as_messages_on_known_topics() -> None:
    h = Harness()
    h.open_continuous("pt-2001")
    h.dealer("place_bet", seat=1, amount=1000)
    published = messages(h.effects)
    assert {"events/session", "state/table"} <= {m.topic for m in published}
    assert all(spec_for(m.topic) is not None for m in published)


def test_the_pure_core_names_no_mqtt_topic() -> None:
    """Only the shell imports the topic tree; the core's modules emit domain effects."""
    offenders = []
    for path in sorted(CORE.glob("*.py")):
        if path.name in SHELL:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("controller.mqtt"):
                offenders.append(f"{path.name}: from {node.module}")
            elif isinstance(node, ast.Import) and any(
                a.name.startswith("controller.mqtt") for a in node.names
            ):
                offenders.append(f"{path.name}: import")
    assert offenders == []
