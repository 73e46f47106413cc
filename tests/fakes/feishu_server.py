"""Feishu's Open API on loopback, for the Feishu connectors through the real ``lark-oapi``.

Serves the documented routes the connectors call, with their payloads (``{"code": 0, "msg":
"success", "data": …}``) and paging (``page_token``, ``has_more``): the tenant token
(``/open-apis/auth/v3/tenant_access_token/internal``: code 10014 for a wrong secret),
``im/v1/chats``, ``im/v1/chats/{id}/members``, ``im/v1/messages``, ``contact/v3/users/{id}``,
``contact/v3/users/find_by_department``, ``drive/v1/files``, ``docx/v1/documents/{id}/raw_content``,
``drive/v1/permissions/{token}/members`` and ``…/public``, ``minutes/v1/minutes/search``,
``minutes/v1/minutes/{token}`` and its ``transcript`` (a text file). A token issued for another
secret answers code 99991663. The world (``POST /world``): ``users`` (open_id, name, email,
department), ``chats`` (chat_id, name, members), ``messages`` by chat, ``files`` by folder
(token, name, type, modified_time), ``docs`` (token → text), ``members`` (token → grants),
``public`` (token → link_share_entity), ``minutes`` (token, title, create_time, transcript).
See ``scripted.py`` (``POST /script`` ``{"token": …}`` sets the app secret).

    python -m tests.fakes.feishu_server --port 9403
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from tests.fakes.scripted import Scripted, failed, serve

PAGE = 2  # small pages: paging is tested (a world's ``page_cap`` sets Feishu's real sizes)


def create_app() -> FastAPI:
    """The test Feishu."""
    app = FastAPI()
    s = Scripted(
        app,
        "secret-test",
        {
            "users": [],
            "chats": [],
            "messages": {},
            "files": {},
            "docs": {},
            "members": {},
            "public": {},
            "minutes": [],
        },
    )

    def ok(data: Any) -> JSONResponse:
        return JSONResponse({"code": 0, "msg": "success", "data": data})

    def page(
        items: list[Any], key: str, request: Request, token_key: str = "page_token"
    ) -> JSONResponse:
        start = int(request.query_params.get("page_token") or 0)
        size = min(int(request.query_params.get("page_size") or 20), s.world.get("page_cap", PAGE))
        more = start + size < len(items)
        return ok(
            {
                key: items[start : start + size],
                "has_more": more,
                token_key: str(start + size) if more else "",
            }
        )

    @app.post("/open-apis/auth/v3/tenant_access_token/internal")
    async def token(request: Request) -> JSONResponse:
        body = await request.json()
        if body.get("app_secret") != s.token:
            return JSONResponse({"code": 10014, "msg": "app secret invalid"}, status_code=400)
        return JSONResponse(
            {"code": 0, "msg": "ok", "tenant_access_token": f"t-{s.token}", "expire": 7200}
        )

    @app.api_route("/open-apis/{path:path}", methods=["GET", "POST"], response_model=None)
    async def api(path: str, request: Request) -> Response:
        parts = path.split("/")
        status = s.count("/".join(parts[:3] + parts[4:]))  # the route, without the id
        if status:
            return failed(status, {"code": 99991400, "msg": "request trigger frequency limit"})
        if request.headers.get("authorization") != f"Bearer t-{s.token}":
            return JSONResponse(
                {"code": 99991663, "msg": "Invalid access token for authorization"}, status_code=400
            )
        w, q = s.world, request.query_params
        users = {u["open_id"]: u for u in w["users"]}
        if path == "im/v1/chats":
            return page(
                [{"chat_id": c["chat_id"], "name": c["name"]} for c in w["chats"]], "items", request
            )
        if parts[:3] == ["im", "v1", "chats"] and parts[4:] == ["members"]:
            chat = next(c for c in w["chats"] if c["chat_id"] == parts[3])
            members = [
                {"member_id": m, "member_id_type": "open_id", "name": users[m]["name"]}
                for m in chat["members"]
            ]
            return page(members, "items", request)
        if path == "im/v1/messages":
            return page(w["messages"].get(q.get("container_id"), []), "items", request)
        if path == "contact/v3/users/find_by_department":
            found = [u for u in w["users"] if u.get("department") == q.get("department_id")]
            return page(found, "items", request)
        if parts[:3] == ["contact", "v3", "users"] and len(parts) == 4:
            return ok({"user": users.get(parts[3], {"open_id": parts[3]})})
        if path == "drive/v1/files":
            return page(
                w["files"].get(q.get("folder_token") or "", []), "files", request, "next_page_token"
            )
        if parts[:3] == ["docx", "v1", "documents"] and parts[4:] == ["raw_content"]:
            return ok({"content": w["docs"][parts[3]]})
        if parts[:3] == ["drive", "v1", "permissions"] and parts[4:] == ["members"]:
            return page(w["members"].get(parts[3], []), "items", request)
        if parts[:3] == ["drive", "v1", "permissions"] and parts[4:] == ["public"]:
            entity = w["public"].get(parts[3], "closed")
            return ok({"permission_public": {"link_share_entity": entity}})
        if path == "minutes/v1/minutes/search":
            return page([{"token": m["token"]} for m in w["minutes"]], "items", request)
        minutes = {m["token"]: m for m in w["minutes"]}
        if parts[:3] == ["minutes", "v1", "minutes"] and len(parts) == 4:
            m = minutes[parts[3]]
            return ok(
                {
                    "minute": {
                        "token": m["token"],
                        "title": m["title"],
                        "create_time": m["create_time"],
                        "owner_id": m.get("owner_id", ""),
                        "url": f"https://feishu.example/minutes/{m['token']}",
                    }
                }
            )
        if parts[:3] == ["minutes", "v1", "minutes"] and parts[4:] == ["transcript"]:
            return Response(minutes[parts[3]]["transcript"].encode(), media_type="text/plain")
        return JSONResponse({"code": 404, "msg": f"no route {path}"}, status_code=404)

    return app


if __name__ == "__main__":
    serve(create_app())
