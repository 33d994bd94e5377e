"""The app as a room serves it (`make serve`, the browser tests): app.py, with its page telling the browser where the
server is.

Streamlit's page does not know the address the app is served at: opened from a deep link (``/lesson``), it first
asks ``/lesson/_stcore/health`` and ``/lesson/_stcore/host-config`` (two 404s) before it finds the server one folder
up. ``KnownBase`` writes that address into the page (``window.__streamlit.BACKEND_BASE_URL``, which Streamlit's
page reads before it connects), so a deep link asks the server once. `streamlit run server.py` finds ``app`` and
serves it; every command-line option of `streamlit run app.py` works as before.
"""

from __future__ import annotations

import json

import streamlit as st
from starlette.middleware import Middleware
from streamlit import config

NOT_PAGES = ("/_stcore/", "/static/", "/media/", "/component/", "/app/static/")


class KnownBase:
    """ASGI middleware: the page Streamlit serves for an app path (its index.html) gets a script that names the
    app's base URL (server.baseUrlPath) before Streamlit's own code runs. Other requests pass untouched."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        path = scope.get("path", "")
        if scope["type"] != "http" or any(part in path for part in NOT_PAGES) or "." in path.rsplit("/", 1)[-1]:
            return await self.app(scope, receive, send)
        headers = [(k, v) for k, v in scope["headers"] if k != b"accept-encoding"]  # the page unzipped: it is small
        held, body = {}, []

        async def with_base(message):
            if message["type"] == "http.response.start":
                held.update(message)
                return
            if message["type"] != "http.response.body":
                return await send(message)
            body.append(message.get("body", b""))
            if message.get("more_body"):
                return
            page = b"".join(body)
            response = dict(held.get("headers", []))
            if response.get(b"content-type", b"").startswith(b"text/html"):
                page = page.replace(b"<head>", b"<head>" + base_script(), 1)
            out = [(k, v) for k, v in held.get("headers", []) if k != b"content-length"]
            await send({**held, "headers": [*out, (b"content-length", str(len(page)).encode())]})
            await send({"type": "http.response.body", "body": page})

        await self.app({**scope, "headers": headers}, receive, with_base)


def base_script() -> bytes:
    """``window.__streamlit.BACKEND_BASE_URL``: the server's origin and the app's base path."""
    base = "/" + config.get_option("server.baseUrlPath").strip("/")
    return (
        "<script>window.__streamlit = Object.assign(window.__streamlit || {}, "
        f"{{BACKEND_BASE_URL: new URL({json.dumps(base.rstrip('/') + '/')}, location.origin).href}});</script>"
    ).encode()


app = st.App("app.py", middleware=[Middleware(KnownBase)])
