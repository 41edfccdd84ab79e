"""Game protection (``tablectl floor sessions``, the dashboard's surveillance view): ``advantage`` (advantage-play
flags and alerts over the play sessions), ``sessions_report`` (the sessions report, CSV and HTML)."""
