"""Audit anchors off the table: the journal's chain head signed with the table's own Ed25519 key."""
