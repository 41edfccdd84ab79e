"""Operating a running table: its status document, Prometheus metrics and the GPIO wiring picture."""
