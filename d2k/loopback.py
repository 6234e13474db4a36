"""An OpenAI-compatible chat-completions endpoint on 127.0.0.1, answered by a Python function: the
demo's scripted models and judge, and the tests' fake endpoints.

``ChatServer(responder)`` serves ``POST /v1/chat/completions``. ``responder(request_json, n)``
(``n`` counts requests from 0) returns the assistant's content (a string), a full message (a dict
with content and/or tool_calls), or a ``Failure`` (an HTTP status, after an optional delay that
lets a client time out). Every request body is kept in ``requests``; usage is counted in words.
It binds to the loopback only, on a free port, and serves from a daemon thread while the ``with``
block lasts.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Failure:
    status: int = 500
    delay_s: float = 0.0
    body: str = '{"error": {"message": "scripted failure", "type": "server_error"}}'


def completion(body: dict, n: int, message: dict) -> dict:
    """A chat-completion response carrying ``message``, with usage counted in words."""
    prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
    completion_tokens = len(str(message.get("content") or "").split()) + 5 * len(message.get("tool_calls") or [])
    return {
        "id": f"chatcmpl-{n}", "object": "chat.completion", "created": int(time.time()),
        "model": body.get("model", "fake"),
        "choices": [{"index": 0, "message": message,
                     "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


class ChatServer:
    def __init__(self, responder):
        self.responder = responder
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep the caller's output clean
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                with server.lock:
                    n = len(server.requests)
                    server.requests.append(body)
                reply = server.responder(body, n)
                if isinstance(reply, Failure):
                    if reply.delay_s:
                        time.sleep(reply.delay_s)
                    self._send(reply.status, reply.body.encode())
                    return
                message = {"role": "assistant", "content": reply} if isinstance(reply, str) else {"role": "assistant", **reply}
                self._send(200, json.dumps(completion(body, n, message)).encode())

            def _send(self, status, data):
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a scripted delay made it time out)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
