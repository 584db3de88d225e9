"""The `sessdex serve` web app: server-rendered pages over the catalog, with a small script for search as you type.

Pages work without JavaScript (forms and links); `static/app.js` only searches as you type, loads the rest of a
long transcript as the reader scrolls and copies the resume command. Templates are Jinja2 with autoescape, and
every value a template prints passes `_finalize` first: control and bidirectional characters are dropped and
detected secrets redacted (unless the server was started with --no-redact). Transcripts are the HTML export's
own fragment (`render_transcript_html`), escaped by that renderer.
"""

from __future__ import annotations

import contextlib
import functools
import shlex
from collections.abc import AsyncIterator, Callable
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup, escape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from sessdex.catalog.export.html import TRANSCRIPT_CSS, clean, render_entry_html, render_transcript_html
from sessdex.catalog.history.search import HistoryEntry
from sessdex.catalog.secrets import keywords_in, redact
from sessdex.catalog.web import charts
from sessdex.catalog.web.data import (
    MATCH_CLOSE,
    MATCH_OPEN,
    MAX_SEARCH_RESULTS,
    PROJECT_SORTS,
    SEARCH_RESULTS,
    SORTS,
    SearchFilters,
    WebCatalog,
    context_entries,
    leaves,
    session_name,
)
from sessdex.catalog.web.security import Guard, allowed_hosts
from sessdex.core.errors import UsageError
from sessdex.core.marks import valid_tag
from sessdex.core.usage import model_name
from sessdex.core.usage_terms import PERIOD_KINDS, DateRange, parse_day

HERE = Path(__file__).resolve().parent
MAX_QUERY_CHARS = 1000
STATIC_TYPES = {"app.js": "text/javascript; charset=utf-8", "app.css": "text/css; charset=utf-8"}


class BadRequest(Exception):
    """A request parameter that cannot be used: answered with 400 and one line."""


def _environment(redact_text: bool) -> Environment:
    def finalize(value: Any) -> Any:
        # Markup is HTML this app made (escaped already); every other string is session or file text.
        if isinstance(value, Markup) or not isinstance(value, str):
            return value
        return _shown_text(value, redact_text)

    environment = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(["html"]),
                              finalize=finalize, trim_blocks=True, lstrip_blocks=True)
    environment.filters["marked"] = lambda text: _marked(text, redact_text)
    environment.filters["money"] = lambda value: f"${value:,.4f}"
    environment.filters["count"] = lambda value: f"{value:,.0f}"
    environment.filters["model"] = model_name  # a model as every usage report names it
    environment.filters["day"] = lambda when: when.astimezone().strftime("%Y-%m-%d %H:%M")
    environment.filters["name"] = session_name
    environment.filters["timestamp"] = lambda seconds: datetime.fromtimestamp(seconds).strftime("%Y-%m-%d %H:%M")
    environment.filters["history_snippet"] = lambda entry: _marked(_history_marked(entry), redact_text)
    return environment


# The shortest text a secret rule can match is longer than this (a keyword and an 8-character value at least).
SHORTEST_SECRET = 12


@functools.lru_cache(maxsize=8192)
def _shown_text(value: str, redact_text: bool) -> str:
    """Text as a page shows it: control and bidirectional characters dropped, secrets redacted. Remembered: a
    listing prints the same folders and names again and again, and search as you type renders the same hits."""
    text = clean(value)
    return redact(text) if redact_text and len(text) >= SHORTEST_SECRET else text


def _marked(snippet: str, redact_text: bool) -> Markup:
    """A snippet with its matched words in <mark>, everything else escaped (and redacted: a snippet whose secret
    the markers would hide from the detector is shown redacted, without marks)."""
    text = clean(snippet)
    if redact_text and keywords_in(text):
        plain = text.replace(MATCH_OPEN, "").replace(MATCH_CLOSE, "")
        redacted = redact(text)
        if redact(plain) != plain and redacted.replace(MATCH_OPEN, "").replace(MATCH_CLOSE, "") != redact(plain):
            return Markup(escape(redact(plain)))
        text = redacted
    return Markup(str(escape(text)).replace(MATCH_OPEN, "<mark>").replace(MATCH_CLOSE, "</mark>"))


def _history_marked(entry: HistoryEntry) -> str:
    """A prompt-history hit's snippet (else its prompt) with its highlighted spans between the match markers."""
    if entry.snippet is None:
        return " ".join(entry.prompt.split())
    text, pieces, position = entry.snippet, [], 0
    for start, end in entry.highlights:
        pieces += [text[position:start], MATCH_OPEN, text[start:end], MATCH_CLOSE]
        position = end
    pieces.append(text[position:])
    return "".join(pieces)


def _day(value: str | None, name: str) -> str | None:
    if not value:
        return None
    try:
        return parse_day(value)
    except ValueError:
        raise BadRequest(f"{name} takes a date as YYYY-MM-DD, not {value[:40]!r}") from None


def _tag(value: str | None) -> str | None:
    if not value:
        return None
    try:
        return valid_tag(value.lstrip("+"))
    except UsageError as exc:
        raise BadRequest(str(exc)) from None


def _count(value: str | None) -> int:
    """How many search results to show (`n`): SEARCH_RESULTS unless asked, at most MAX_SEARCH_RESULTS."""
    try:
        return min(MAX_SEARCH_RESULTS, max(1, int(value))) if value else SEARCH_RESULTS
    except ValueError:
        raise BadRequest("n takes a whole number") from None


def _page_number(value: str | None) -> int:
    try:
        return max(1, int(value or 1))
    except ValueError:
        raise BadRequest("page takes a whole number") from None


def _start(value: str | None) -> int:
    try:
        return max(0, int(value or 0))
    except ValueError:
        raise BadRequest("start takes a whole number") from None


def _query_text(request: Request) -> str:
    text = request.query_params.get("q", "")
    if len(text) > MAX_QUERY_CHARS:
        raise BadRequest(f"the search text is longer than {MAX_QUERY_CHARS} characters")
    return text


def create_app(web: WebCatalog, *, token: str, host: str, port: int, manage_catalog: bool = True) -> Any:
    """The ASGI app (guarded: Host check, token, security headers) over `web`. With `manage_catalog`, the
    background freshness pass runs while the app does, and the catalog is closed when it stops."""
    templates = _environment(web.redact)

    def page(name: str, request: Request, status: int = 200, **values: Any) -> HTMLResponse:
        values.setdefault("query", "")
        return HTMLResponse(templates.get_template(name).render(request=request, nav=name, **values),
                            status_code=status)

    def handler(function: Callable[[Request], Response]) -> Callable[[Request], Response]:
        def run(request: Request) -> Response:
            try:
                return function(request)
            except BadRequest as exc:
                return page("error.html", request, 400, message=str(exc))
        return run

    def search(request: Request) -> Response:
        text = _query_text(request)
        params = request.query_params
        filters = SearchFilters(project=params.get("project") or None, repo=params.get("repo") or None,
                                machine=params.get("machine") or None, since=_day(params.get("since"), "since"),
                                until=_day(params.get("until"), "until"), model=params.get("model") or None,
                                pinned=bool(params.get("pinned")), starred=bool(params.get("starred")),
                                tag=_tag(params.get("tag")))
        count = _count(params.get("n"))
        hits = web.search(text, filters, limit=count) if text.strip() else []
        more = None
        if len(hits) == count and count < MAX_SEARCH_RESULTS:
            more = "/search?" + urlencode([*((key, value) for key, value in params.multi_items()
                                             if key not in ("n", "partial")),
                                           ("n", str(min(MAX_SEARCH_RESULTS, count * 4)))])
        values = {"query": text, "hits": hits, "filters": filters, "progress": web.content_progress(),
                  "searched": bool(text.strip()), "more": more}
        if params.get("partial"):
            return HTMLResponse(templates.get_template("search_results.html").render(**values))
        return page("search.html", request, machines=web.machines(), models=web.models(), tags=web.tags(), **values)

    def projects(request: Request) -> Response:
        params = request.query_params
        sort = params.get("sort", "date")
        if sort not in PROJECT_SORTS:
            raise BadRequest(f"sort by one of {', '.join(PROJECT_SORTS)}")
        descending = params.get("order", "asc" if sort == "name" else "desc") != "asc"
        listing = web.project_page(sort=sort, descending=descending, page=_page_number(params.get("page")))

        def link(**changes: Any) -> str:
            current = {"sort": sort, "order": "desc" if descending else "asc", "page": listing.page}
            return "/projects?" + urlencode({**current, **changes})

        return page("projects.html", request, listing=listing, sort=sort, descending=descending, link=link)

    def project(request: Request) -> Response:
        params = request.query_params
        cwd = params.get("cwd", "")
        if not cwd:
            raise BadRequest("name a project: /project?cwd=DIR")
        sort = params.get("sort", "date")
        if sort not in SORTS:
            raise BadRequest(f"sort by one of {', '.join(SORTS)}")
        descending = params.get("order", "desc") != "asc"
        listing = web.project_sessions(cwd, sort=sort, descending=descending, page=_page_number(params.get("page")))

        def link(**changes: Any) -> str:
            current = {"cwd": cwd, "sort": sort, "order": "desc" if descending else "asc", "page": listing.page}
            return "/project?" + urlencode({**current, **changes})

        return page("project.html", request, cwd=cwd, listing=listing, sort=sort, descending=descending, link=link)

    def session(request: Request) -> Response:
        info = web.session(request.path_params["session_id"])
        if info is None:
            return page("error.html", request, 404, message="No session with this id in the catalog")
        params = request.query_params
        view = params.get("view", "branch")
        if view not in ("branch", "all", "context"):
            raise BadRequest("view is one of branch, all, context")
        try:
            transcript = web.transcript(info, leaf=params.get("leaf") or None, all_branches=view == "all")
        except (ValueError, LookupError) as exc:
            raise BadRequest(str(exc)) from None
        except OSError:
            return page("error.html", request, 404, message="The session file cannot be read")
        start = _start(params.get("start"))
        if view == "context":
            fragment, more = render_transcript_html(web.shown(transcript, context_entries(transcript))), None
        elif view == "all":
            fragment, more = render_transcript_html(web.shown(transcript, transcript.shown)), None
        else:
            part, more = web.chunk(transcript, start)
            fragment = render_transcript_html(web.shown(transcript, part))
        branch_ends = leaves(transcript)
        base = f"/session/{info.id}"

        def link(**changes: Any) -> str:
            current = {"view": view, "leaf": transcript.leaf_id or ""}
            merged = {key: value for key, value in {**current, **changes}.items() if value}
            return base + ("?" + urlencode(merged) if merged else "")

        return page("session.html", request, info=info, transcript=transcript, fragment=Markup(fragment),
                    view=view, branch_ends=branch_ends, more=more, link=link,
                    resume_command=f"xr {shlex.quote(info.id)}", remaining=len(transcript.shown) - (more or 0))

    def session_entries(request: Request) -> Response:
        """The next chunk of a transcript's entries as an HTML fragment (what the script appends as you scroll)."""
        info = web.session(request.path_params["session_id"])
        if info is None:
            return HTMLResponse("", status_code=404)
        params = request.query_params
        start = _start(params.get("start"))
        try:
            transcript = web.transcript(info, leaf=params.get("leaf") or None)
        except (ValueError, LookupError) as exc:
            raise BadRequest(str(exc)) from None
        part, following = web.chunk(transcript, start)
        body = "".join(render_entry_html(entry) for entry in web.shown_entries(part))
        headers = {"x-next-start": str(following)} if following is not None else {}
        return HTMLResponse(body, headers=headers)

    def usage(request: Request) -> Response:
        params = request.query_params
        period = params.get("period", "daily")
        if period not in PERIOD_KINDS:
            raise BadRequest(f"period is one of {', '.join(PERIOD_KINDS)}")
        metric = params.get("metric", "cost")
        if metric not in ("cost", "tokens"):
            raise BadRequest("metric is cost or tokens")
        project_cwd = params.get("project") or None
        days = DateRange(_day(params.get("since"), "since"), _day(params.get("until"), "until"))
        report = web.usage(period, project_cwd, days)  # type: ignore[arg-type]
        colors = charts.model_colors(report.rows, metric)
        chart = Markup(charts.stacked_bars(report.rows, metric, colors))
        by_project = web.usage("project", project_cwd, days)
        by_model = web.usage("model", project_cwd, days)
        return page("usage.html", request, report=report, chart=chart, colors=colors, period=period, metric=metric,
                    project=project_cwd or "", days=days, by_project=by_project, by_model=by_model,
                    progress=web.content_progress())

    def usage_json(request: Request) -> Response:
        """`sessdex usage KIND --json` (with --all unless a project is named): the one computation, as JSON."""
        params = request.query_params
        kind = params.get("report", "daily")
        if kind not in ("daily", "weekly", "monthly", "session", "project", "model"):
            raise BadRequest("unknown report")
        days = DateRange(_day(params.get("since"), "since"), _day(params.get("until"), "until"))
        report = web.usage(kind, params.get("project") or None, days)  # type: ignore[arg-type]
        return JSONResponse(report.to_json(bool(params.get("breakdown"))))

    def history(request: Request) -> Response:
        text = _query_text(request)
        entries = web.history(text) if text.strip() else []
        return page("history.html", request, query=text, entries=entries, missing=entries is None)

    def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in STATIC_TYPES:
            return Response("not found\n", status_code=404, media_type="text/plain")
        body = (HERE / "static" / name).read_text(encoding="utf-8")
        if name == "app.css":
            body = TRANSCRIPT_CSS + body
        return Response(body, media_type=STATIC_TYPES[name])

    def root(request: Request) -> Response:
        return RedirectResponse("/search", status_code=303)

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        if manage_catalog:
            web.start()
        try:
            yield
        finally:
            if manage_catalog:
                web.stop()

    routes = [
        Route("/", root),
        Route("/search", handler(search)),
        Route("/projects", handler(projects)),
        Route("/project", handler(project)),
        Route("/session/{session_id}", handler(session)),
        Route("/session/{session_id}/entries", handler(session_entries)),
        Route("/usage", handler(usage)),
        Route("/usage.json", handler(usage_json)),
        Route("/history", handler(history)),
        Route("/static/{name}", static),
    ]
    app = Starlette(routes=routes, lifespan=lifespan)
    return Guard(app, token=token, hosts=allowed_hosts(host, port), port=port)
