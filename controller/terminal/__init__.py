"""Textual screens over MQTT: the dealer pit terminal (`tablectl terminal`) and the floor supervisor's alert
console (`tablectl alerts`). They talk to the controller through the broker only (docs/terminal.md)."""
