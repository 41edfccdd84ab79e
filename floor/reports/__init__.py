"""What an inspector and a floor manager ask of the archive (``tablectl floor report|shift|rounds|jackpot``, the
dashboard's pages), read-only: ``figures`` (each figure's one name, meaning and sign), ``queries``, ``coverage``
(whether the archive holds all a window needs), ``day``/``day_html`` (a day's summary), ``shift*`` (a shift's
figures), ``rounds*`` and ``round_page`` (archived rounds), ``play_*``/``sessions_play`` (the play of a seat and
its sessions), ``edges``/``profile_edges`` (each profile's house edge)."""
