"""The table state machine's vocabulary (machine.py): its leaf states and its triggers, as enums.

Both are ``StrEnum``: a member is its text, so the names in snapshots, journal records and state documents
("betting", "jammed") stay exactly what they were; the code names them, a type checker checks them.
The ``transitions`` library is given the plain texts (machine.py, ``build_machine``)."""

from __future__ import annotations

from enum import StrEnum


class TableState(StrEnum):
    """Where the table is: the leaf state (``TableCore.state``, ``Gate.state``; snapshot ``state``)."""

    # the session
    CLOSED = "closed"
    LOADING = "loading"
    CLOSING = "closing"
    DECK_CHECK_FAILED = "deck_check_failed"
    # inside an open session: the shoe cycle and the round phases (PT-2001 r.8-11, r.13-22, r.58-62)
    CUT = "cut"  # batch shoe: waiting for the cut after a shuffle (PT-2001 r.8)
    BETTING = "betting"
    NO_MORE_BETS = "no_more_bets"
    DEALING = "dealing"
    PLAYERS = "players"
    DEALER = "dealer"
    SETTLED = "settled"  # result final; continuous: waiting for the lid cycle, record contestable (r.59-62)
    CARDS_RETURNED = "cards_returned"
    SHUFFLING = "shuffling"  # batch shoe: reshuffle after the last round of the shoe (r.11)
    # the faults (issue 13 §1-2, §5; issue 14 item 3)
    JAMMED = "jammed"
    LINK_DOWN = "link_down"
    TAMPER = "tamper"
    JOURNAL_IO = "journal_io"  # a journal write failed (disk full or read-only)
    INTEGRITY = "integrity"  # the journal chain, a snapshot or the pinned configuration does not check out
    RESYNC = "resync"
    SHOE_SEQUENCE = "shoe_sequence"  # a card frame out of the shoe's sequence
    CARD_COUNT = "card_count"  # a card code more often than the decks hold


class Trigger(StrEnum):
    """An input the machine accepts or refuses (``Gate.may`` / ``allow`` / ``go``; ``may_<trigger>()``)."""

    OPEN_TABLE = "open_table"
    LOADED = "loaded"
    LOADED_CONTINUOUS = "loaded_continuous"
    CUT_DONE = "cut_done"
    PLACE_BET = "place_bet"
    CLEAR_BET = "clear_bet"
    JACKPOT_CHIP = "jackpot_chip"
    CLOSE_BETS = "close_bets"
    START_DEAL = "start_deal"
    PLAY = "play"
    INITIAL_DEALT = "initial_dealt"
    TO_DEALER = "to_dealer"
    SETTLE = "settle"
    VOID = "void"
    CARDS_IN = "cards_in"
    NEXT_ROUND = "next_round"
    RESHUFFLE = "reshuffle"
    DEALER_SIGN_IN = "dealer_sign_in"
    SEAT_PLAYER = "seat_player"
    SHUFFLED = "shuffled"
    CLOSE_TABLE = "close_table"
    DECK_OK = "deck_ok"
    DECK_BAD = "deck_bad"
    ACK_DECK_CHECK = "ack_deck_check"
    RUN_DECK_CHECK = "run_deck_check"
    JAM = "jam"
    LINK_LOST = "link_lost"
    FORCED = "forced"
    JOURNAL_FAILED = "journal_failed"
    INTEGRITY_FAILED = "integrity_failed"
    INTEGRITY_CLOSE = "integrity_close"
    SEQUENCE_FAULT = "sequence_fault"
    COUNT_FAULT = "count_fault"
    FAULT_CLEARED = "fault_cleared"
    RESTARTED = "restarted"
    RESUME = "resume"
