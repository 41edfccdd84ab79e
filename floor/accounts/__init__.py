"""The floor's people (``tablectl floor users``, the dashboard's login): ``users`` (accounts and roles),
``logins`` (the login log and lockout), ``sessions`` (the dashboard's session cookies)."""
