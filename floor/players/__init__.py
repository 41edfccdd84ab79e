"""Players on the floor (issue 41): who sat where, rated from the tables' own archived records.

- ``events``: the tables' ``events/player`` documents, checked (hostile text) into typed ``PlayerEvent``;
- ``visits``: a player's seat visits (``player_in`` .. ``player_out``) across tables: one player, one visit at a
  time (pure);
- ``ratings``: each visit's figures and each player's over a window from the archived rounds (pure);
- ``registry``: the personal data (name, details) kept only in the floor's database, erasure and retention;
- ``load``: reading the archive into the above; ``report``: text, CSV and HTML.

docs/floor.md "Players" says what is kept, where, for how long and who may read it.
"""
