"""Reading web pages safely: no private addresses, bounded, polite, cached.

Every connection the fetcher opens — the first request and every redirect — goes through
:class:`GuardedBackend`, which resolves the host *itself* and refuses loopback, private,
link-local (cloud metadata at ``169.254.169.254`` among them), multicast and reserved
addresses before a byte is sent, then connects to the address it checked (a DNS answer that
changes between the check and the connection cannot slip through). Hosts an operator lists
in ``allow_hosts`` (an intranet, a test's own loopback server) are the only exception, by
name. Schemes other than http(s) and hosts on the deny list (or off the allow list, when one
is set) are refused on every hop.

A page is read with a byte cap and a time cap (what arrived by then is kept and marked cut),
only when it is HTML, PDF or text, and only when the site's ``robots.txt`` (RFC 9309, parsed by
``protego``) allows it. The main text of HTML is extracted with ``trafilatura``. Pages are
cached by canonical URL and revalidated with their ``ETag``, so a research run reads a page
once.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import time
import warnings
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import httpcore
import httpx

if TYPE_CHECKING:
    from protego import Protego

USER_AGENT = "seekgraph/1.0 (+https://github.com/seekgraph)"
ROBOTS_AGENT = "seekgraph"
#: What a page may be; anything else (images, archives, executables) is not read.
READABLE_TYPES = ("text/html", "application/xhtml+xml", "application/pdf", "text/plain")


class FetchRefusedError(PermissionError):
    """A URL the fetcher will not read: a private address, a scheme, a listed domain, robots."""


class FetchFailedError(ConnectionError):
    """A page that could not be read (timeout before anything arrived, 4xx/5xx, bad type)."""


def canonical_url(url: str) -> str:
    """One spelling per page.

    Lower-case scheme and host; tracking parameters, the fragment and a trailing ``/`` on
    the path removed; query parameters sorted (``courlan``).
    """
    from courlan import clean_url  # (imported when a page is fetched, not at every start)

    cleaned = clean_url(url.strip()) or url.strip()
    parts = urlsplit(cleaned)
    path = parts.path.rstrip("/") or "/"
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), path, parts.query, ""))


def forbidden_address(ip: str) -> bool:
    """Loopback, private, link-local (metadata), multicast, reserved or unspecified."""
    address = ipaddress.ip_address(ip.split("%", 1)[0])
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped
    return bool(
        address.is_private
        or address.is_loopback
        or address.is_link_local
        or address.is_multicast
        or address.is_reserved
        or address.is_unspecified
        or not address.is_global
    )


@dataclass(frozen=True)
class FetchPolicy:
    """Where the fetcher may go and how much it may read."""

    allow_hosts: frozenset[str] = frozenset()
    """Host names fetched even when they resolve to private or loopback addresses."""
    allow_domains: frozenset[str] = frozenset()
    """When set, only these domains (and their sub-domains) are fetched."""
    deny_domains: frozenset[str] = frozenset()
    max_bytes: int = 2_000_000
    timeout: float = 10.0
    max_redirects: int = 5
    obey_robots: bool = True

    def check_url(self, url: str) -> None:
        """Refuse a URL by its scheme and domain (addresses are checked at connect time)."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            raise FetchRefusedError(f"only http(s) pages are read, not {parts.scheme or '?'}:")
        host = (parts.hostname or "").lower().rstrip(".")
        if not host:
            raise FetchRefusedError("a URL without a host")
        if _in_domains(host, self.deny_domains):
            raise FetchRefusedError(f"{host} is on the deny list")
        if self.allow_domains and host not in self.allow_hosts:
            if not _in_domains(host, self.allow_domains):
                raise FetchRefusedError(f"{host} is not on the allow list")


def _in_domains(host: str, domains: Iterable[str]) -> bool:
    return any(host == d or host.endswith("." + d) for d in domains)


class GuardedBackend(httpcore.AnyIOBackend):
    """Opens TCP connections only to public addresses (or to the allowed host names)."""

    def __init__(self, allow_hosts: frozenset[str]) -> None:
        self.allow_hosts = allow_hosts

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.AsyncNetworkStream:
        """Resolve ``host``, refuse it when any address is private, connect to the checked one."""
        name = host.lower().rstrip(".")
        loop = asyncio.get_running_loop()
        try:
            infos = await loop.getaddrinfo(name, port, type=socket.SOCK_STREAM)
        except socket.gaierror as exc:
            raise httpcore.ConnectError(f"cannot resolve {name}: {exc}") from None
        addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
        if name not in self.allow_hosts:
            bad = [a for a in addresses if forbidden_address(a)]
            if bad:  # one private answer is enough to refuse: never pick "the good one"
                raise FetchRefusedError(
                    f"{name} resolves to a private or reserved address; not fetched"
                )
        if not addresses:
            raise httpcore.ConnectError(f"{name} has no address")
        failure: Exception | None = None
        for address in addresses:  # ::1 first and a server on 127.0.0.1 only: try the next
            try:
                return await super().connect_tcp(
                    address, port, timeout, local_address, socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
        assert failure is not None
        raise failure


class GuardedTransport(httpx.AsyncHTTPTransport):
    """httpx's transport over a connection pool whose every connection is guarded."""

    def __init__(self, allow_hosts: frozenset[str]) -> None:
        super().__init__(trust_env=False, retries=0)
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=httpx.create_ssl_context(),
            max_connections=20,
            max_keepalive_connections=10,
            keepalive_expiry=5.0,
            network_backend=GuardedBackend(allow_hosts),
        )


@dataclass
class Page:
    """A page as read: its text and what is known about it."""

    url: str
    """The canonical URL it was asked for (the document id)."""
    final_url: str
    title: str
    text: str
    content_type: str
    fetched_at: str
    published: str | None = None
    etag: str | None = None
    bytes: int = 0
    cut: bool = False
    """The byte or time cap stopped the download; the text is what arrived before it."""
    seconds: float = 0.0


@dataclass
class _Robots:
    parser: Protego | None  # (protego's, imported when robots.txt is read)
    """``None``: the site could not say (5xx, unreachable) — RFC 9309: assume disallowed."""
    allow_all: bool = False


@dataclass
class PageFetcher:
    """Reads pages under a :class:`FetchPolicy`, with a cache by URL and ETag."""

    policy: FetchPolicy = field(default_factory=FetchPolicy)
    cache_size: int = 512
    client: httpx.AsyncClient | None = None
    fetches: int = 0
    """Network requests for pages (a page served from cache or by a 304 counts too)."""

    def __post_init__(self) -> None:
        if self.client is None:
            self.client = httpx.AsyncClient(
                transport=GuardedTransport(self.policy.allow_hosts),
                follow_redirects=True,
                max_redirects=self.policy.max_redirects,
                headers={"User-Agent": USER_AGENT},
                event_hooks={"request": [self._check_hop]},
                trust_env=False,
            )
        self._cache: OrderedDict[str, Page] = OrderedDict()
        self._robots: dict[str, _Robots] = {}

    async def _check_hop(self, request: httpx.Request) -> None:
        self.policy.check_url(str(request.url))  # the first request and every redirect

    async def allowed_by_robots(self, url: str) -> bool:
        """Whether the site's robots.txt lets ``seekgraph`` read ``url`` (cached per site)."""
        if not self.policy.obey_robots:
            return True
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        robots = self._robots.get(origin)
        if robots is None:
            robots = await self._read_robots(origin)
            self._robots[origin] = robots
        if robots.allow_all:
            return True
        if robots.parser is None:
            return False
        return bool(robots.parser.can_fetch(url, ROBOTS_AGENT))

    async def _read_robots(self, origin: str) -> _Robots:
        assert self.client is not None
        try:
            response = await self.client.get(f"{origin}/robots.txt", timeout=self.policy.timeout)
        except FetchRefusedError:
            raise
        except httpx.HTTPError:
            return _Robots(None)
        if 400 <= response.status_code < 500:
            return _Robots(None, allow_all=True)  # no robots.txt: everything may be read
        if response.status_code >= 500:
            return _Robots(None)
        from protego import Protego

        return _Robots(Protego.parse(response.text[:500_000]))

    async def fetch(self, url: str) -> Page:
        """The page at ``url``: refused, failed, or read within the caps."""
        assert self.client is not None
        key = canonical_url(url)
        self.policy.check_url(key)
        if not await self.allowed_by_robots(key):
            raise FetchRefusedError(f"robots.txt of {urlsplit(key).netloc} disallows {key}")
        cached = self._cache.get(key)
        if cached is not None and not cached.etag:  # nothing to revalidate with: reuse it
            self._cache.move_to_end(key)
            return cached
        headers = {"If-None-Match": cached.etag} if cached and cached.etag else {}
        started = time.perf_counter()
        self.fetches += 1
        try:
            # the body's own cap stops a trickle at ``timeout``; this one bounds the rest
            async with asyncio.timeout(self.policy.timeout + 2.0):
                async with self.client.stream("GET", key, headers=headers) as response:
                    if response.status_code == 304 and cached is not None:
                        self._cache.move_to_end(key)
                        return cached
                    if response.status_code >= 400:
                        raise FetchFailedError(f"{key} answered {response.status_code}")
                    kind = response.headers.get("content-type", "").split(";")[0].strip()
                    if kind.lower() not in READABLE_TYPES:
                        raise FetchFailedError(f"{key} is {kind or 'of no type'}; not read")
                    body, cut = await self._bounded(response, started)
                    final = str(response.url)
                    etag = response.headers.get("etag")
                    charset = response.charset_encoding or "utf-8"
        except TimeoutError:
            raise FetchFailedError(
                f"{key}: nothing readable within {self.policy.timeout:.0f} s"
            ) from None
        except httpx.TooManyRedirects:
            hops = self.policy.max_redirects
            raise FetchFailedError(f"{key}: more than {hops} redirects") from None
        except httpx.HTTPError as exc:
            raise FetchFailedError(f"{key}: {type(exc).__name__}") from None
        page = _page_of(key, final, kind.lower(), body, charset, etag, cut)
        page.seconds = time.perf_counter() - started
        self._cache[key] = page
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
        return page

    async def _bounded(self, response: httpx.Response, started: float) -> tuple[bytes, bool]:
        """At most ``max_bytes``, and only what arrives before the time cap."""
        chunks: list[bytes] = []
        size = 0
        stream = response.aiter_bytes()
        while True:
            left = self.policy.timeout - (time.perf_counter() - started)
            if left <= 0:
                return b"".join(chunks), True
            try:
                chunk = await asyncio.wait_for(anext(stream), timeout=left)
            except StopAsyncIteration:
                return b"".join(chunks), False
            except TimeoutError:
                if not chunks:
                    raise
                return b"".join(chunks), True
            chunks.append(chunk)
            size += len(chunk)
            if size >= self.policy.max_bytes:
                return b"".join(chunks)[: self.policy.max_bytes], True

    async def aclose(self) -> None:
        """Close the connection pool."""
        if self.client is not None:
            await self.client.aclose()


def _page_of(
    url: str, final: str, kind: str, body: bytes, charset: str, etag: str | None, cut: bool
) -> Page:
    fetched = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    title, text, published = "", "", None
    if kind == "application/pdf":
        text = _pdf_text(body)
    else:
        raw = body.decode(charset, errors="replace")
        if kind == "text/plain":
            text = raw
        else:
            title, text, published = _html_text(raw, final)
    host = urlsplit(final).hostname or url
    return Page(
        url=url,
        final_url=final,
        title=(title or text.strip().split("\n", 1)[0][:120] or host).strip(),
        text=text.strip(),
        content_type=kind,
        fetched_at=fetched,
        published=published,
        etag=etag,
        bytes=len(body),
        cut=cut,
    )


def _html_text(html: str, url: str) -> tuple[str, str, str | None]:
    """Title, main text (paragraphs separated by blank lines) and date, by ``trafilatura``."""
    with warnings.catch_warnings():  # its downloader (unused here) asks for SOCKS support
        warnings.simplefilter("ignore")
        import trafilatura

    document = trafilatura.bare_extraction(
        html, url=url, include_tables=True, include_comments=False, favor_recall=True
    )
    if document is None or isinstance(document, dict):
        return "", "", None
    text = (document.text or "").replace("\n", "\n\n")
    return document.title or "", text, document.date


def _pdf_text(body: bytes) -> str:
    import io

    from pypdf import PdfReader

    try:
        reader = PdfReader(io.BytesIO(body))
        return "\n\n".join((p.extract_text() or "") for p in reader.pages)
    except Exception:  # a cut or broken PDF: nothing readable
        return ""
