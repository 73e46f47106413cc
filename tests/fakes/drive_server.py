"""Google Drive v3 and the Admin SDK Directory API on loopback, for the Drive connector
through the real ``google-api-python-client``.

Serves the documented routes the connector calls, with their payloads and paging
(``nextPageToken``/``pageToken``): ``GET /drive/v3/files`` (``files`` with the requested
fields; a shared-drive file's ``permissions`` left out, as Drive does),
``/drive/v3/files/{id}/permissions``, ``/drive/v3/files/{id}?alt=media`` (download),
``/drive/v3/files/{id}/export?mimeType=`` (a Google Doc as HTML, a Sheet as CSV, Slides as
text), and ``/admin/directory/v1/groups/{key}/members``; a bearer token (Google's 401 error
body otherwise). The world (``POST /world``): ``files`` (id, name, mimeType, version,
modifiedTime, ``text`` or ``base64``, ``permissions``, ``shared_drive``), ``groups``
({e-mail: [member e-mails]}). See ``scripted.py``.

    python -m tests.fakes.drive_server --port 9402
"""

from __future__ import annotations

import base64
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from tests.fakes.scripted import Scripted, failed, serve

PAGE = 2  # small pages: paging is tested (a world's ``page_cap`` sets Drive's real sizes)


def create_app() -> FastAPI:
    """The test Drive."""
    app = FastAPI()
    s = Scripted(app, "ya29.test", {"files": [], "groups": {}})

    def page(items: list[Any], key: str, request: Request) -> JSONResponse:
        start = int(request.query_params.get("pageToken") or 0)
        size = min(int(request.query_params.get("pageSize") or 100), s.world.get("page_cap", PAGE))
        body: dict[str, Any] = {key: items[start : start + size]}
        if start + size < len(items):
            body["nextPageToken"] = str(start + size)
        return JSONResponse(body)

    def error(status: int, message: str) -> JSONResponse:
        return JSONResponse(
            {"error": {"code": status, "message": message, "errors": [{"message": message}]}},
            status_code=status,
        )

    @app.get("/{path:path}", response_model=None)
    async def google(path: str, request: Request) -> Response:
        parts = path.split("/")
        route = "/".join(parts[:3] + ["ID" if len(parts) > 3 else ""] + parts[4:5]).rstrip("/")
        if request.query_params.get("alt") == "media" and len(parts) == 4:
            route += "?alt=media"
        status = s.count(route)
        if status:
            return failed(status, {"error": {"code": status, "message": "Rate Limit Exceeded"}})
        if request.headers.get("authorization") != f"Bearer {s.token}":
            return error(401, "Request had invalid authentication credentials.")
        files = {f["id"]: f for f in s.world["files"]}
        if path == "drive/v3/files":
            listed = []
            for f in s.world["files"]:
                item = {k: f[k] for k in ("id", "name", "mimeType", "version", "modifiedTime")}
                item["webViewLink"] = f"https://drive.example/{f['id']}"
                if not f.get("shared_drive"):
                    item["permissions"] = f["permissions"]
                listed.append(item)
            return page(listed, "files", request)
        if parts[:3] == ["drive", "v3", "files"] and len(parts) >= 4:
            file = files.get(parts[3])
            if file is None:
                return error(404, f"File not found: {parts[3]}.")
            data = base64.b64decode(file["base64"]) if "base64" in file else file["text"].encode()
            if parts[4:] == ["permissions"]:
                return page(file["permissions"], "permissions", request)
            if parts[4:] == ["export"]:
                return Response(data, media_type=request.query_params.get("mimeType"))
            if request.query_params.get("alt") == "media":
                return Response(data, media_type=file["mimeType"])
        if parts[:4] == ["admin", "directory", "v1", "groups"] and parts[5:] == ["members"]:
            if s.world.get("directory_forbidden"):
                return error(403, "Not Authorized to access this resource/api")
            members = s.world["groups"].get(parts[4], [])
            return page([{"email": m, "type": "USER"} for m in members], "members", request)
        return error(404, f"No route {path}")

    return app


if __name__ == "__main__":
    serve(create_app())
