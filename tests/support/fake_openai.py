"""The tests' fake OpenAI-compatible endpoint on 127.0.0.1: ``d2k.loopback.ChatServer`` under the
names the tests use. ``FakeOpenAI(responder)``; ``responder(request_json, n)`` returns content, a
message or a ``Failure``; ``server.requests`` holds every request body."""

from d2k.loopback import ChatServer as FakeOpenAI
from d2k.loopback import Failure

__all__ = ["Failure", "FakeOpenAI"]
