"""The emulated shuffler-shoe: a pty speaking the shoe protocol, driven by a scenario and a control socket."""
