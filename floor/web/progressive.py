"""The dashboard's linked-progressive page (issue 40): ``GET /progressive?link=L``, read-only, for supervisors;
any other role is refused with 403 and the refusal journaled (``dashboard_log``) with who and why. The page is
floor/progressive/page.py's: every value escaped, no script."""

from __future__ import annotations

from aiohttp import web

from controller.jackpot.config import LINK_NAME
from floor.accounts.logins import LogEvent
from floor.accounts.users import Role
from floor.progressive.page import link_page
from floor.progressive.report import link_report
from floor.reports.round_page import REPORT_CSP
from floor.web.auth import SESSION, Auth, Database, deny


class ProgressivePage:
    def __init__(self, db: Database, auth: Auth) -> None:
        self.db, self.auth = db, auth

    def routes(self, app: web.Application) -> None:
        app.router.add_get("/progressive", self._page)

    async def _page(self, request: web.Request) -> web.Response:
        session = request[SESSION]
        if session.role is not Role.SUPERVISOR:
            why = f"{request.path}: supervisors only (this account is {session.role.value})"
            await self.db.log(LogEvent.REFUSED, session.user, self.auth.client(request), why)
            return deny(403, why)
        link = request.query.get("link", "")
        if not LINK_NAME.match(link):
            why = "link: expected [a-z0-9-]{1,32}"
            await self.db.log(LogEvent.REFUSED, session.user, self.auth.client(request), why)
            return deny(400, why)
        report = await self.db.call(link_report, link)
        if report is None:
            raise web.HTTPNotFound(text="no such linked progressive")
        return web.Response(
            text=link_page(report), content_type="text/html", headers={"Content-Security-Policy": REPORT_CSP}
        )
