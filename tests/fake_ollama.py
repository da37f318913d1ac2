"""FakeOllamaServer: a FAKE standing in for an Ollama server, which cannot run on the test machine.

This is a test double, not Ollama. It speaks just enough of the Ollama HTTP API for the real
``ollama`` Python client (0.6.x) to talk to it, with the request and response JSON that client
sends and parses:

- ``POST /api/embed``    ``{"model", "input": str | [str]}`` ->
  ``{"model", "embeddings": [[float, ...], ...]}``; one deterministic unit vector per text,
  derived from a hash of the text (the same text always gets the same vector), of a
  configurable dimension. The vectors carry no meaning: equal texts are equal, others random.
- ``POST /api/chat``     ``{"model", "messages", "stream", "format"?}`` ->
  ``{"model", "created_at", "message": {"role": "assistant", "content"}, "done": true, ...}``
- ``POST /api/generate`` ``{"model", "prompt", "stream", "format"?}`` ->
  ``{"model", "created_at", "response", "done": true, ...}``
- ``GET  /api/tags``     -> ``{"models": [{"model", "name", ...}, ...]}``

Chat and generate answer with ``reply`` (a string, or a callable of the request body); when
the request asks for ``"format": "json"`` or a JSON schema they answer with ``json_reply``
instead. ``"stream": true`` is answered as NDJSON chunks, like Ollama.

Failure modes, set per test with :meth:`FakeOllamaServer.set_mode`:

- ``"ok"``: answer normally.
- ``"slow"``: wait ``delay`` seconds, then answer normally (for client timeouts).
- ``"error500"``: HTTP 500 with ``{"error": ...}``, as Ollama does when a model crashes.
- ``"malformed"``: HTTP 200 whose body is not valid JSON.

``set_mode(mode, times=n)`` applies the mode to the next ``n`` requests only, then goes back to
``"ok"`` (e.g. two 500s then a success). An unreachable server is :meth:`stop` (nothing listens
on its port any more) or :func:`unreachable_url` (a free port with nothing listening).

Every request is counted per endpoint (:meth:`count`) and its JSON body kept (:attr:`bodies`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import socket
import threading
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

MODES = ("ok", "slow", "error500", "malformed")

Reply = str | Callable[[dict[str, Any]], str]


def unreachable_url() -> str:
    """URL of a local port that nothing listens on (bound once to pick it, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def fake_embedding(text: str, dim: int) -> list[float]:
    """The deterministic unit vector the fake server returns for ``text``."""
    seed = int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")
    vector = np.random.default_rng(seed).standard_normal(dim)
    return [float(v) for v in vector / np.linalg.norm(vector)]


class FakeOllamaServer:
    """A fake Ollama HTTP server on 127.0.0.1 (random free port), served from a thread.

    Args:
        embedding_dim: length of the vectors returned by ``/api/embed``.
        reply: chat/generate answer text, or a callable ``body -> text``.
        json_reply: answer when the request asks for JSON output (``format``), or a callable.
        models: model names listed by ``/api/tags``; when ``strict_models`` is true, a request
            naming another model gets Ollama's 404 ``model not found``.
    """

    def __init__(
        self,
        *,
        embedding_dim: int = 384,
        reply: Reply = "This is a reply from the fake Ollama server.",
        json_reply: Reply = "{}",
        models: list[str] | None = None,
        strict_models: bool = False,
    ) -> None:
        self.embedding_dim = embedding_dim
        self.reply: Reply = reply
        self.json_reply: Reply = json_reply
        self.models = models if models is not None else ["nomic-embed-text", "llama3.2"]
        self.strict_models = strict_models
        self.bodies: list[tuple[str, dict[str, Any]]] = []
        self._mode = "ok"
        self._delay = 0.0
        self._mode_times: int | None = None
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._connections: set[socket.socket] = set()
        self._thread: threading.Thread | None = None
        self.port = 0

    # --- lifecycle ------------------------------------------------------------------------------

    def start(self) -> FakeOllamaServer:
        """Start listening on a free port of 127.0.0.1; returns self."""
        if self._httpd is not None:
            return self
        self._stopping.clear()
        httpd = ThreadingHTTPServer(("127.0.0.1", self.port), _make_handler(self))
        httpd.daemon_threads = True
        self.port = httpd.server_address[1]
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop listening; afterwards :attr:`url` is unreachable. Safe to call twice."""
        self._stopping.set()  # wakes handlers sleeping in "slow" mode
        httpd, self._httpd = self._httpd, None
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
        # Keep-alive connections outlive the listening socket; cut them so that a client
        # holding one sees the server gone, as it would after Ollama exits.
        with self._lock:
            connections, self._connections = self._connections, set()
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeOllamaServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """Base URL to pass as the ``host`` of an ``ollama.Client``."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self._httpd is not None

    # --- control --------------------------------------------------------------------------------

    def set_mode(self, mode: str, *, delay: float = 0.0, times: int | None = None) -> None:
        """Answer the next requests in ``mode`` (see the module docstring).

        Args:
            mode: "ok", "slow", "error500" or "malformed".
            delay: seconds to wait before answering in "slow" mode.
            times: apply the mode to this many requests, then return to "ok"; None = until
                changed.
        """
        if mode not in MODES:
            raise ValueError(f"unknown fake Ollama mode {mode!r}; choose from {MODES}")
        with self._lock:
            self._mode, self._delay, self._mode_times = mode, delay, times

    @property
    def mode(self) -> str:
        return self._mode

    def count(self, endpoint: str | None = None) -> int:
        """Requests received on ``endpoint`` (e.g. "/api/embed"), or on all endpoints."""
        with self._lock:
            if endpoint is None:
                return sum(self._counts.values())
            return self._counts[endpoint]

    def reset_counts(self) -> None:
        """Forget the request counts and bodies seen so far."""
        with self._lock:
            self._counts.clear()
            self.bodies.clear()

    # --- request handling (called from the handler threads) -------------------------------------

    def _next_mode(self, endpoint: str, body: dict[str, Any]) -> tuple[str, float]:
        with self._lock:
            self._counts[endpoint] += 1
            self.bodies.append((endpoint, body))
            mode, delay = self._mode, self._delay
            if self._mode_times is not None:
                self._mode_times -= 1
                if self._mode_times <= 0:
                    self._mode, self._delay, self._mode_times = "ok", 0.0, None
        return mode, delay

    def _wait(self, seconds: float) -> None:
        self._stopping.wait(seconds)

    def _model_missing(self, body: dict[str, Any]) -> str | None:
        model = str(body.get("model", ""))
        if self.strict_models and model not in self.models and f"{model}:latest" not in self.models:
            return model
        return None

    def _answer_text(self, body: dict[str, Any]) -> str:
        wants_json = body.get("format") not in (None, "")
        chosen = self.json_reply if wants_json else self.reply
        return chosen(body) if callable(chosen) else chosen

    def _embed(self, body: dict[str, Any]) -> dict[str, Any]:
        texts = body.get("input", "")
        if isinstance(texts, str):
            texts = [texts]
        return {
            "model": body.get("model", ""),
            "embeddings": [fake_embedding(str(t), self.embedding_dim) for t in texts],
            "total_duration": 1000,
            "load_duration": 10,
            "prompt_eval_count": len(texts),
        }

    def _tags(self) -> dict[str, Any]:
        return {
            "models": [
                {
                    "name": name,
                    "model": name,
                    "modified_at": "2025-01-01T00:00:00Z",
                    "size": 1000,
                    "digest": hashlib.sha256(name.encode()).hexdigest(),
                    "details": {"format": "gguf", "family": "fake", "parameter_size": "1B"},
                }
                for name in self.models
            ]
        }


def _now() -> str:
    return datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")


def _final_fields(model: str) -> dict[str, Any]:
    return {
        "model": model,
        "created_at": _now(),
        "done": True,
        "done_reason": "stop",
        "total_duration": 1000,
        "load_duration": 10,
        "prompt_eval_count": 1,
        "prompt_eval_duration": 10,
        "eval_count": 1,
        "eval_duration": 10,
    }


def _chunks(text: str, pieces: int = 3) -> list[str]:
    size = max(1, -(-len(text) // pieces))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _make_handler(server: FakeOllamaServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # silence stderr
            pass

        def setup(self) -> None:
            super().setup()
            with server._lock:
                server._connections.add(self.connection)

        def finish(self) -> None:
            with server._lock:
                server._connections.discard(self.connection)
            with contextlib.suppress(OSError):
                super().finish()

        def do_GET(self) -> None:
            self._handle(body={})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                self._send_json(400, {"error": "fake ollama: request body is not JSON"})
                return
            self._handle(body=body if isinstance(body, dict) else {})

        def _handle(self, body: dict[str, Any]) -> None:
            endpoint = self.path.split("?", 1)[0]
            routes = {
                ("POST", "/api/embed"),
                ("POST", "/api/chat"),
                ("POST", "/api/generate"),
                ("GET", "/api/tags"),
            }
            if (self.command, endpoint) not in routes:
                self._send_json(404, {"error": f"fake ollama: no route {self.command} {endpoint}"})
                return
            mode, delay = server._next_mode(endpoint, body)
            if mode == "slow":
                server._wait(delay)
            if mode == "error500":
                self._send_json(500, {"error": "fake ollama: simulated internal server error"})
                return
            if mode == "malformed":
                self._send_raw(200, b'{"model": "x", "embeddings": [[0.1, 0.2', "application/json")
                return
            missing = server._model_missing(body) if endpoint != "/api/tags" else None
            if missing is not None:
                message = f'model "{missing}" not found, try pulling it first'
                self._send_json(404, {"error": message})
                return
            if endpoint == "/api/embed":
                self._send_json(200, server._embed(body))
            elif endpoint == "/api/tags":
                self._send_json(200, server._tags())
            else:
                self._answer(endpoint, body)

        def _answer(self, endpoint: str, body: dict[str, Any]) -> None:
            model = str(body.get("model", ""))
            text = server._answer_text(body)
            if endpoint == "/api/chat":

                def part(content: str) -> dict[str, Any]:
                    return {"message": {"role": "assistant", "content": content}}

            else:

                def part(content: str) -> dict[str, Any]:
                    return {"response": content}

            if not body.get("stream", False):
                self._send_json(200, {**_final_fields(model), **part(text)})
                return
            lines = [
                {"model": model, "created_at": _now(), "done": False, **part(chunk)}
                for chunk in _chunks(text)
            ]
            lines.append({**_final_fields(model), **part("")})
            payload = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
            self._send_raw(200, payload, "application/x-ndjson")

        def _send_json(self, status: int, payload: dict[str, Any]) -> None:
            self._send_raw(status, json.dumps(payload).encode(), "application/json")

        def _send_raw(self, status: int, payload: bytes, content_type: str) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout); nothing to answer

    return Handler
