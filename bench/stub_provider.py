"""The stub OpenAI-compatible server of the provider tests, standalone, with a configurable pace.

    .venv/bin/python bench/stub_provider.py --port 8001 --start-delay 2 --pieces 40 --piece-delay 0.02

then serve the app against it and load it with bench/sse_client.py:

    ANSWERS_PROVIDER=openai OPENAI_BASE_URL=http://127.0.0.1:8001/v1 OPENAI_API_KEY=x \\
        .venv/bin/python -m daphne -p 8000 project.asgi:application
    .venv/bin/python bench/sse_client.py http://127.0.0.1:8000 --answers 20 --streams 10

Every chat completion streams `--pieces` pieces (words, a citation marker
now and then) `--piece-delay` seconds apart after `--start-delay` seconds
(a model's time to first token). Stops on Ctrl-C.
"""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.fixtures.providers import Reply, StubOpenAIServer


def paced_reply(*, pieces: int, piece_delay: float, start_delay: float) -> Reply:
    """`pieces` short pieces citing sources 1-3, `piece_delay` s apart, after `start_delay` s."""
    words = [f"word{i} " if i % 10 else f"word{i} [{1 + (i // 10) % 3}] " for i in range(pieces)]
    return Reply(pieces=words, delay_s=piece_delay, start_delay_s=start_delay)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8001)
    parser.add_argument("--pieces", type=int, default=40)
    parser.add_argument("--piece-delay", type=float, default=0.02, help="Seconds between pieces.")
    parser.add_argument("--start-delay", type=float, default=0.0, help="Seconds before the first piece.")
    args = parser.parse_args()
    reply = paced_reply(pieces=args.pieces, piece_delay=args.piece_delay, start_delay=args.start_delay)
    server = StubOpenAIServer(default=reply, port=args.port).start()
    print(f"stub provider on {server.base_url}: {args.pieces} pieces, {args.piece_delay:g} s apart, "
          f"first after {args.start_delay:g} s; Ctrl-C stops it", flush=True)  # fmt: skip
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    main()
