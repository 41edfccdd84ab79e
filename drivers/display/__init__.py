"""The progressive jackpot display (LED sign) on its own serial line: protocol, driver, emulator.

See docs/display.md for the line protocol.
"""
