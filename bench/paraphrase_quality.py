"""Paraphrase quality: 40 questions in a reader's words over the demo corpus, lexical vs hybrid retrieval.

    .venv/bin/python bench/paraphrase_quality.py --base-url http://127.0.0.1:11434/v1 \\
        --model nomic-embed-text --dimensions 768                       # Ollama
    .venv/bin/python bench/paraphrase_quality.py --base-url https://api.openai.com/v1 \\
        --model text-embedding-3-small --dimensions 1536 --api-key-env OPENAI_API_KEY
    .venv/bin/python bench/paraphrase_quality.py --stub                 # the tests' stub (no quality claim)

Loads the demo corpus into a temporary SQLite database, embeds every chunk with
the given model, then asks each question with embeddings off (lexical) and on
(hybrid) and counts how often the expected topic is the first source and among
the five sources, at the default threshold (0.1). The key is read from an
environment variable, never from the command line.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# (question, expected demo topic): the reader's words, not the page's.
PARAPHRASES = [
    ("How can I leave a loop early?", "break"),
    ("How do I skip the rest of this pass through a loop?", "continue"),
    ("How do I bring code from another file into my program?", "import"),
    ("How do I make a small function without a name?", "lambda"),
    ("How do I signal that something went wrong?", "raise"),
    ("How do I check that a condition holds while debugging?", "assert"),
    ("How do I get rid of a variable?", "del"),
    ("What do I write when a block must do nothing?", "pass"),
    ("How do I hand back a value from a function?", "return"),
    ("How do I produce values one at a time lazily?", "yield"),
    ("How do I change a module-level variable inside a function?", "global"),
    ("How do I change a variable of the enclosing function from an inner one?", "nonlocal"),
    ("How do I run code only when a condition is true?", "if"),
    ("How do I repeat code as long as a condition holds?", "while"),
    ("How do I go over every item of a list?", "for"),
    ("How do I catch errors and clean up afterwards?", "try"),
    ("How do I make sure a file gets closed automatically?", "with"),
    ("How do I define my own type of object?", "class"),
    ("How do I define a reusable piece of code with parameters?", "function"),
    ("How do I write code that waits for other tasks without blocking?", "async"),
    ("How do I pause a coroutine until a result is ready?", "await"),
    ("How do I add to a variable in place, like x plus equals one?", "augassign"),
    ("How do I give a value to a name?", "assignment"),
    ("Which operations bind tighter than others?", "operator-summary"),
    ("How do I take part of a list by start and end positions?", "slicings"),
    ("How do I check whether an item is contained in a collection?", "in"),
    ("How do I compare two values for equality or order?", "comparisons"),
    ("How do key-value stores work in Python?", "typesmapping"),
    ("What counts as false in a condition?", "truth"),
    ("How do I step through my program to find a bug?", "debugger"),
    ("How do I insert values into a text template?", "formatstrings"),
    ("How do I split, join or change the case of text?", "string-methods"),
    ("How do I write text literals, including raw and byte ones?", "strings"),
    ("How do I write whole numbers in hex or binary?", "integers"),
    ("How do I call a function with keyword arguments?", "calls"),
    ("How does Python decide which variable a name refers to?", "naming"),
    ("What happens when an error is not handled?", "exceptions"),
    ("How do I customise how my objects are printed or compared?", "customization"),
    ("How do I write objects that set up and tear down around a block?", "context-managers"),
    ("How do I shift the bits of a number left or right?", "shifting"),
]


def run(args: argparse.Namespace) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
    os.environ.setdefault("SECRET_KEY", "bench-only-not-secret")
    import django

    django.setup()
    from django.core.management import call_command
    from django.test import override_settings

    from answers.content.demo import load_demo_corpus
    from answers.models import Document
    from answers.retrieval.embeddings import embed_chunks, stale_chunk_ids
    from answers.retrieval.pipeline import retrieve

    call_command("migrate", verbosity=0, skip_checks=True)
    load_demo_corpus()
    stub = None
    if args.stub:
        from tests.fixtures.embeddings_server import StubEmbeddingsServer, embeddings_settings

        stub = StubEmbeddingsServer().start()
        on = embeddings_settings(stub, ANSWERS_EMBEDDINGS_TIMEOUT=30.0)
    else:
        on = {
            "ANSWERS_EMBEDDINGS": "openai",
            "ANSWERS_EMBEDDINGS_BASE_URL": args.base_url,
            "ANSWERS_EMBEDDINGS_API_KEY": os.environ.get(args.api_key_env, "") if args.api_key_env else "",
            "ANSWERS_EMBEDDING_MODEL": args.model,
            "ANSWERS_EMBEDDING_DIMENSIONS": args.dimensions,
            "ANSWERS_EMBEDDINGS_TIMEOUT": 30.0,
        }
    keys = dict(Document.objects.values_list("id", "key"))
    try:
        with override_settings(**on):
            embed_chunks(stale_chunk_ids())
        scores = {}
        for mode, overrides in (("lexical", {"ANSWERS_EMBEDDINGS": "none"}), ("hybrid", on)):
            first = top5 = 0
            with override_settings(**overrides):
                for question, topic in PARAPHRASES:
                    result = retrieve(question, min_score=0.1, max_sources=5)
                    found = [keys[s.document_id] for s in result.sources if s.document_id is not None]
                    first += found[:1] == [f"pydoc:{topic}"]
                    top5 += f"pydoc:{topic}" in found
            scores[mode] = (first, top5)
    finally:
        if stub is not None:
            stub.stop()
    model = "stub (not a quality claim)" if args.stub else args.model
    print(f"{len(PARAPHRASES)} paraphrased questions, model {model}:")
    for mode, (first, top5) in scores.items():
        print(f"  {mode:8} first {first:2}/{len(PARAPHRASES)}   among five {top5:2}/{len(PARAPHRASES)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", help="The OpenAI-compatible server, ending in /v1.")
    parser.add_argument("--model", help="The embedding model.")
    parser.add_argument("--dimensions", type=int, help="The model's vector size.")
    parser.add_argument("--api-key-env", help="Name of the environment variable holding the key, if any.")
    parser.add_argument("--stub", action="store_true", help="Use the tests' stub server instead.")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if not args.stub and not (args.base_url and args.model and args.dimensions):
        parser.error("give --base-url, --model and --dimensions, or --stub")
    if args.child:
        run(args)
        return
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp}/quality.sqlite3"}
        subprocess.run([sys.executable, __file__, "--child", *sys.argv[1:]], env=env, check=True)


if __name__ == "__main__":
    main()
