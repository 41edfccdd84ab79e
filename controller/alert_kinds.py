"""Alert kinds: the one list the table core, the jackpot, the alert manager, the MQTT schemas and docs/mqtt.md
share. An alert of a kind missing here would be refused by the alert manager and never reach the floor;
`tests/test_alert_kinds.py` checks that every kind the code raises is listed and that the schemas agree."""

from __future__ import annotations

ALERT_KINDS: dict[str, str] = {
    # faults that block dealing (PT-2001 r.51, r.60)
    "jam": "the shoe jammed: dealing blocked until a chief inspector (or a technician) clears it (PT-2001 r.51)",
    "link_down": "the shoe link is down: dealing blocked",
    "tamper": "the lid was opened while locked (PT-2001 r.60)",
    "forced_lid": "the shoe reported its lid forced open (PT-2001 r.60)",
    "device_error": "the shoe reported an error",
    "shoe_sequence": "a card frame repeated or out of shoe_seq order: not dealt, dealing blocked (issue 13 §5)",
    "card_count": "a card code more often in a round than the decks hold: not dealt, dealing blocked",
    "shoe_command": "a command to the shoe (lid, light, shuffle, count) failed",
    # cards and counts
    "card_unreadable": "a card the reader could not read or a damaged card: a chief inspector replaces it (r.51)",
    "dealer_error": "a card or a decision against the rules (dealing order, drawing rule, late chip, ...)",
    "round_void": "a round was voided and its bets returned (PT-ONLINE-2015 r.27-28)",
    "shoe_count": "the shoe counts a different number of cards inside than expected",
    "discard_count": "cards still out of the shoe after the round's cards went in",
    "discard_lid_closed": "cards inserted while the lid was not open (PT-2001 r.59)",
    "cards_added": "more cards went in than came out: cards added after the loading (PT-2001 r.54-55)",
    "loading": "the loading of the decks is not as the rules ask (PT-2001 r.53-54)",
    "deck_check": "the deck verification found missing, extra or unknown cards (PT-2001 r.55)",
    "deck_count": "cards short at the close of the session (PT-2001 r.55)",
    "deck_verification": "a deck verification could not be made",
    "cut_card": "a cut card where none belongs (continuous shuffler, PT-2001 r.52, r.56)",
    "warning_card": "a warning card where none belongs (continuous shuffler, PT-2001 r.52, r.56)",
    "warning_card_position": "the warning card came out away from where the rule places it (PT-2001 r.9)",
    "profile_mismatch": "the shoe is not the kind of shoe the session was opened for",
    # jackpot (PT-2001 r.41-50)
    "jackpot_pending": "a jackpot hit awaits a supervisor's verification and payment (PT-2001 r.49)",
    "jackpot_correction": "the jackpot meter was corrected (requested and confirmed by two supervisors)",
    "display_fault": "the jackpot sign is not connected: the jackpot is not playable (PT-2001 r.41)",
    "jackpot_link": "the linked progressive is unavailable (no valid meter document in time, or suspended), or a "
    "prize it sent was refused: linked jackpot chips refused",
    # the service
    "config_integrity": "the configuration or a rule profile changed since it was recorded",
    "command_rejected": "a forged, stale, replayed or unauthorised command was refused (repeats counted in one)",
    "command_lockout": "5 failed signatures in 10 minutes: the user or source is refused for 15 minutes",
    "command_flood": "commands dropped by the rate limit (counted in aggregate)",
    "journal_io": "a journal write failed (disk full, read-only, I/O error): dealing refused, lid locked",
    "disk_space": "the journal's filesystem is low on space or inodes: a warning, then no new round",
    "integrity": "journal chain, snapshot or the session's pinned configuration does not check out",
    "journal_integrity": "the journal contradicts its chain or its signed checkpoints, or a row it does not chain"
    " was refused for publishing",
}
