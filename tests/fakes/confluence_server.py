"""Confluence Cloud's REST API on loopback, for the Confluence connector through the real
``atlassian-python-api`` client.

Serves the documented routes the connector calls, with their documented payloads and paging:
v2 ``/wiki/api/v2/spaces`` and ``/wiki/api/v2/spaces/{id}/permissions`` (``results``,
``_links.next`` with a ``cursor``); v1 ``/wiki/rest/api/content`` (``expand`` of the body,
version, ancestors and read restrictions), ``/wiki/rest/api/content/{id}/child/attachment``,
``/wiki/rest/api/group/{id}/membersByGroupId``, ``/wiki/rest/api/user`` (``results``,
``start``, ``limit``, ``size``, ``_links.next``); attachment downloads; HTTP basic auth with an
e-mail and API token (401 otherwise). The world (``POST /world``): ``users`` (accountId,
email, publicName), ``groups`` ({id: [accountId]}), ``spaces`` (id, key, name, ``read``:
principals), ``pages`` (id, space, title, body, version, parent, ``restrict``: principals),
``attachments`` (id, page, title, version, ``text`` or ``base64``). See ``scripted.py``.

    python -m tests.fakes.confluence_server --port 9401
"""

from __future__ import annotations

import base64
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from tests.fakes.scripted import Scripted, failed, serve

USER = "bot@fernhill.example"


def create_app() -> FastAPI:
    """The test Confluence."""
    app = FastAPI()
    s = Scripted(
        app, "atl-test", {"users": [], "groups": {}, "spaces": [], "pages": [], "attachments": []}
    )

    def v1(items: list[Any], request: Request, path: str) -> JSONResponse:
        start = int(request.query_params.get("start") or 0)
        limit = min(int(request.query_params.get("limit") or 25), 50)  # the server caps it
        chunk = items[start : start + limit]
        links: dict[str, str] = {"base": str(request.base_url).rstrip("/") + "/wiki"}
        if start + limit < len(items):
            links["next"] = f"{path}?start={start + limit}&limit={limit}"
        return JSONResponse(
            {"results": chunk, "start": start, "limit": limit, "size": len(chunk), "_links": links}
        )

    def v2(items: list[Any], request: Request, path: str) -> JSONResponse:
        start = int(request.query_params.get("cursor") or 0)
        cap = s.world.get("page_cap", 2)  # small pages: paging is tested
        limit = min(int(request.query_params.get("limit") or 25), cap)
        links = {"next": f"{path}?cursor={start + limit}"} if start + limit < len(items) else {}
        return JSONResponse({"results": items[start : start + limit], "_links": links})

    def user(account: str) -> dict[str, Any]:
        found = next((u for u in s.world["users"] if u["accountId"] == account), None)
        return {"type": "known", **(found or {"accountId": account, "publicName": account})}

    def principal(who: str) -> dict[str, Any]:
        kind, _, ident = who.partition(":")
        return {"type": kind, "id": ident}

    def attachments_of(page_id: str) -> list[dict[str, Any]]:
        return [
            {"id": a["id"], "type": "attachment", "title": a["title"],
             "version": {"number": a.get("version", 1), "when": "2026-11-02T10:00:00.000Z"},
             "_links": {"download": f"/download/attachments/{a['page']}/{a['title']}"}}
            for a in s.world["attachments"] if a["page"] == page_id
        ]  # fmt: skip

    def page_json(page: dict[str, Any], request: Request) -> dict[str, Any]:
        ancestors: list[dict[str, Any]] = []
        parent = page.get("parent")
        while parent:
            above = next(p for p in s.world["pages"] if p["id"] == parent)
            ancestors.insert(0, {"id": above["id"], "title": above["title"]})
            parent = above.get("parent")
        shown = attachments_of(page["id"])
        rules = page.get("restrict") or []
        users = [user(r.split(":", 1)[1]) for r in rules if r.startswith("user:")]
        groups = [
            {"type": "group", "id": r.split(":", 1)[1], "name": r.split(":", 1)[1]}
            for r in rules
            if r.startswith("group:")
        ]
        return {
            "id": page["id"],
            "type": "page",
            "status": "current",
            "title": page["title"],
            "space": {"key": page["space"]},
            "version": {
                "number": page.get("version", 1),
                "when": page.get("when", "2026-11-02T10:00:00.000Z"),
            },
            "body": {"storage": {"value": page["body"], "representation": "storage"}},
            "ancestors": ancestors,
            "restrictions": {
                "read": {
                    "operation": "read",
                    "restrictions": {
                        "user": {"results": users, "size": len(users)},
                        "group": {"results": groups, "size": len(groups)},
                    },
                }
            },
            "_links": {"webui": f"/spaces/{page['space']}/pages/{page['id']}"},
            **(
                {
                    "children": {
                        "attachment": {
                            "results": shown[:25],
                            "size": len(shown[:25]),
                            "_links": {"next": "…"} if len(shown) > 25 else {},
                        }
                    }
                }
                if "children.attachment" in request.query_params.get("expand", "")
                else {}
            ),
        }

    @app.api_route("/wiki/{path:path}", methods=["GET"], response_model=None)
    async def wiki(path: str, request: Request) -> Response:
        route = "/".join(p if not p.isdigit() else "N" for p in path.split("/"))
        status = s.count(route)
        if status:
            return failed(status, {"message": "Rate limited"})
        auth = request.headers.get("authorization", "")
        if auth != "Basic " + base64.b64encode(f"{USER}:{s.token}".encode()).decode():
            return JSONResponse({"message": "Client must be authenticated"}, status_code=401)
        w, q, parts = s.world, request.query_params, path.split("/")
        if path == "api/v2/spaces":
            keys = set((q.get("keys") or "").split(",")) - {""}
            spaces = [
                {"id": x["id"], "key": x["key"], "name": x["name"]}
                for x in w["spaces"]
                if not keys or x["key"] in keys
            ]
            return v2(spaces, request, "/wiki/api/v2/spaces")
        if parts[:3] == ["api", "v2", "spaces"] and parts[4:] == ["permissions"]:
            space = next(x for x in w["spaces"] if x["id"] == parts[3])
            grants = [
                {
                    "id": f"{i}",
                    "principal": principal(p),
                    "operation": {"key": "read", "targetType": "space"},
                }
                for i, p in enumerate(space["read"])
            ]
            grants.append(
                {
                    "id": "x",
                    "principal": principal(space["read"][0]),
                    "operation": {"key": "delete", "targetType": "space"},
                }
            )
            return v2(grants, request, f"/wiki/{path}")
        if path == "rest/api/content":
            pages = [page_json(p, request) for p in w["pages"] if p["space"] == q.get("spaceKey")]
            return v1(pages, request, "/rest/api/content")
        if parts[:3] == ["rest", "api", "content"] and parts[4:] == ["child", "attachment"]:
            found = attachments_of(parts[3])
            return v1(found, request, f"/{path}")
        if parts[:3] == ["rest", "api", "group"] and parts[4:] == ["membersByGroupId"]:
            members = [user(a) for a in w["groups"].get(parts[3], [])]
            return v1(members, request, f"/{path}")
        if path == "rest/api/user":
            return JSONResponse(user(str(q.get("accountId"))))
        if parts[:2] == ["download", "attachments"]:
            a = next(
                a for a in w["attachments"] if a["page"] == parts[2] and a["title"] == parts[3]
            )
            data = base64.b64decode(a["base64"]) if "base64" in a else a["text"].encode()
            return Response(data, media_type="application/octet-stream")
        return JSONResponse({"message": f"No route {path}"}, status_code=404)

    return app


if __name__ == "__main__":
    serve(create_app())
