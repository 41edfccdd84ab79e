"""The floor's dashboard (runs as ``tablectl floor web``): ``app`` (the aiohttp application), ``config``,
``auth`` (login and roles), ``live`` (the live updates), ``pages`` (table and shift pages), ``players``,
``progressive``, ``relay`` (supervisor commands) and ``surveillance`` (one page each), with what they show:
``dashboard``, ``pitmap``, ``table_view``, ``surveillance_view``; the browser's files are in ``static/``."""
