"""The hardware-in-the-loop bench: the real `tablectl run` process against emulated or real hardware
(docs/bench.md).

`config` reads a bench description (TOML), `rig` starts/stops the parts it names, `recorder` is the
validating MQTT consumer, `driver` plays rounds, `faults` injects failures, `reconcile` proves nothing was
lost, `soak` ties them together for `tablectl bench soak`, `fuzz` feeds the parsers garbage.
"""
