"""Device drivers: shoe wire protocol, serial/USB transports, jackpot display, and their emulators."""
