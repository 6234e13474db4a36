"""The loopback chat endpoint the demo and the tests share: loopback only, replies, failures."""

import json
import urllib.error
import urllib.request

import pytest

from d2k.loopback import ChatServer, Failure


def _post(url: str, body: dict) -> tuple[int, dict]:
    req = urllib.request.Request(url + "/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_it_binds_to_the_loopback_and_answers_with_the_responder():
    def responder(body, n):
        return "hello there" if n == 0 else {"content": None, "tool_calls": [{"id": "c", "type": "function",
                                                                              "function": {"name": "f", "arguments": "{}"}}]}

    with ChatServer(responder) as server:
        assert server.httpd.server_address[0] == "127.0.0.1"
        status, first = _post(server.base_url, {"model": "m", "messages": [{"role": "user", "content": "a b c"}]})
        status2, second = _post(server.base_url, {"model": "m", "messages": []})
    assert status == status2 == 200
    assert first["choices"][0]["message"] == {"role": "assistant", "content": "hello there"}
    assert first["usage"]["prompt_tokens"] == 3 and first["usage"]["completion_tokens"] == 2
    assert second["choices"][0]["finish_reason"] == "tool_calls"
    assert [r["model"] for r in server.requests] == ["m", "m"]


def test_a_failure_is_an_http_error():
    with ChatServer(lambda body, n: Failure(status=429)) as server:
        status, body = _post(server.base_url, {"messages": []})
    assert status == 429 and body["error"]["type"] == "server_error"


def test_it_is_closed_after_the_block():
    with ChatServer(lambda body, n: "x") as server:
        url = server.base_url
    with pytest.raises(urllib.error.URLError):
        _post(url, {"messages": []})
