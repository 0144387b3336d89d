"""The support check's `lexical` method: precision/recall on a labeled set, and its cost per answer.

    .venv/bin/python bench/bench_support.py            # writes bench/RESULTS_support.md (+ .json)

Runs in a child process on a fresh, migrated SQLite database holding the demo
corpus (the Python reference topics), so word weights come from the same index
the app reads (answers.support.corpus).

Quality: bench/support_labeled.jsonl pairs a sentence with a demo topic and says
whether that topic's excerpt (its first chunks, up to 2,000 characters, as
retrieval shows a source) supports it. Kinds: `copied` (a sentence of the
excerpt), `paraphrase` (the same fact reworded, keeping its technical terms),
`other_topic` (a sentence of an unrelated topic) are the clear cases;
`loose_paraphrase` (no shared terms), `neighbour_topic` (a sentence of a topic
that says nearly the same, e.g. break/continue) and `same_topic_unsupported`
(a claim on the topic the excerpt does not make, often false) are the hard ones.

- Flagging `unsupported`: each pair as a cited sentence; flagged when its score
  is under the bar. Positive = the source does not support the sentence.
- `grounded_by`: each supported sentence as an uncited one among five retrieved
  sources, its own and four others; right when its own source is in
  grounded_by, wrong for every other source listed. Two settings for the four:
  drawn at random from unrelated topics (clear), and the sentence's own top
  retrieval hits (hard: neighbours on the same subject, some of which may
  really say the same thing; all count as wrong here).

Cost: an answer of 5 sources x 2,000 characters and 8 sentences (~150 words,
half cited, half not: 4 x 1 + 4 x 5 pairs), timed as the pure part (split,
score, record; the excerpt cache cleared each time) and the corpus look-up
(chunk counts of the answer's words: cached, and cold), against `retrieve()`
for a question on the same topic in the same run, in turns.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
LABELED = Path(__file__).resolve().parent / "support_labeled.jsonl"
RESULTS = Path(__file__).resolve().parent / "RESULTS_support.md"
RESULTS_JSON = Path(__file__).resolve().parent / "RESULTS_support.json"
CLEAR = ("copied", "paraphrase", "other_topic")
BARS = [round(0.05 * i, 2) for i in range(1, 20)]
RUNS = 200
EXCERPT_CHARS = 2000
# Topics that say much the same as each other: never drawn as "unrelated" distractors.
NEIGHBOURS = [
    {"break", "continue", "while", "for"},
    {"booleans", "truth"},
    {"dict", "typesmapping"},
    {"global", "nonlocal", "naming"},
]


def _pr(flagged: int, right: int, relevant: int) -> dict[str, float]:
    precision = right / flagged if flagged else 1.0
    recall = right / relevant if relevant else 1.0
    return {"precision": precision, "recall": recall, "flagged": flagged, "right": right}


# The functions below import the app inside: they run in the child, after django.setup().


def _excerpts() -> dict[str, str]:
    """Each demo topic's first chunks up to EXCERPT_CHARS, as retrieval shows a source."""
    from answers.models import Chunk

    out: dict[str, list[str]] = {}
    for key, text in Chunk.objects.filter(document__key__startswith="pydoc:").values_list(
        "document__key", "text"
    ):
        topic = key.removeprefix("pydoc:")
        parts = out.setdefault(topic, [])
        if not parts or sum(map(len, parts)) + len(text) <= EXCERPT_CHARS:
            parts.append(text)
    return {topic: "\n\n".join(parts) for topic, parts in out.items()}


def _unrelated(topic: str, topics: list[str]) -> list[str]:
    near = set().union(*(group for group in NEIGHBOURS if topic in group)) | {topic}
    return [t for t in topics if t not in near]


def _quality(rows: list[dict[str, Any]], excerpts: dict[str, str]) -> dict[str, Any]:
    from answers.models import Document
    from answers.retrieval.pipeline import retrieve
    from answers.support.corpus import corpus_idf
    from answers.support.lexical import content_words, lexical_score

    idf = corpus_idf(w for row in rows for w in content_words(row["sentence"]))
    for row in rows:
        row["score"] = lexical_score(row["sentence"], excerpts[row["source"]], idf)
    rng = random.Random(18)
    topics = sorted(excerpts)
    by_key = dict(Document.objects.values_list("id", "key"))
    grounding: dict[str, list[tuple[float, list[float]]]] = {"random": [], "retrieved": []}
    for row in rows:
        if not row["supports"]:
            continue
        own = lexical_score(row["sentence"], excerpts[row["source"]], idf)
        others = rng.sample(_unrelated(row["source"], topics), 4)
        grounding["random"].append((own, [lexical_score(row["sentence"], excerpts[t], idf) for t in others]))
        hits = retrieve(row["sentence"], min_score=0.0, max_sources=6).sources
        near = [by_key[s.document_id].removeprefix("pydoc:") for s in hits if s.document_id in by_key]
        near = [t for t in near if t != row["source"]][:4]
        grounding["retrieved"].append((own, [lexical_score(row["sentence"], excerpts[t], idf) for t in near]))

    sweep = []
    for bar in BARS:
        entry: dict[str, Any] = {"bar": bar}
        for name, kinds in (("clear", CLEAR), ("all", None)):
            chosen = [r for r in rows if kinds is None or r["kind"] in kinds]
            flagged = [r for r in chosen if r["score"] < bar]
            entry[f"unsupported_{name}"] = _pr(
                len(flagged), sum(not r["supports"] for r in flagged), sum(not r["supports"] for r in chosen)
            )
        for name, cases in grounding.items():
            right = sum(own >= bar for own, _ in cases)
            wrong = sum(score >= bar for _, scores in cases for score in scores)
            entry[f"grounded_{name}"] = _pr(right + wrong, right, len(cases))
        sweep.append(entry)
    by_kind: dict[str, list[float]] = {}
    for row in rows:
        by_kind.setdefault(row["kind"], []).append(row["score"])
    kinds = {
        kind: {
            "n": len(scores),
            "min": min(scores),
            "median": statistics.median(scores),
            "max": max(scores),
        }
        for kind, scores in by_kind.items()
    }
    return {"sweep": sweep, "kinds": kinds, "pairs": len(rows), "documents": len(excerpts)}


def _answer(excerpts: dict[str, str], topics: list[str]) -> tuple[str, list[Any]]:
    """8 sentences over 5 sources of 2,000 characters: 4 cite one source each, 4 cite nothing."""
    from answers.support.record import SourceText
    from answers.support.sentences import split_sentences

    sources = []
    for number, topic in enumerate(topics, start=1):
        text = excerpts[topic]
        while len(text) < EXCERPT_CHARS:
            text += "\n\n" + excerpts[topic]
        sources.append(SourceText(number, number if number <= 4 else None, text[:EXCERPT_CHARS]))
    sentences = []
    for i in range(8):
        prose = [s.text for s in split_sentences(sources[i % 5].excerpt) if 60 < len(s.text) < 160]
        sentence = prose[i % len(prose)].replace("\n", " ")
        sentences.append(sentence[:-1] + f" [{i % 4 + 1}]." if i < 4 else sentence)
    return " ".join(sentences), sources


def _cost(excerpts: dict[str, str]) -> dict[str, float]:
    from answers.retrieval.pipeline import retrieve
    from answers.support import corpus
    from answers.support.corpus import corpus_idf
    from answers.support.lexical import content_words, excerpt_stems
    from answers.support.methods import finish_record, lexical_scores, support_inputs
    from answers.support.passages import excerpt_sentences

    question = "How does the with statement call __enter__ and __exit__ on a context manager?"
    text, sources = _answer(excerpts, ["with", "context-managers", "try", "raise", "exceptions"])
    timings: dict[str, list[float]] = {
        "pure": [],
        "pure_cpu": [],
        "lookup": [],
        "lookup_cold": [],
        "retrieve": [],
        "retrieve_cpu": [],
    }
    record: dict[str, Any] = {}
    for run in range(RUNS + 10):
        started, started_cpu = time.perf_counter(), time.thread_time()
        retrieve(question, min_score=0.1, max_sources=5)
        retrieved, retrieved_cpu = time.perf_counter(), time.thread_time()
        inputs = support_inputs(text, sources)
        words = [w for s in inputs.sentences for w in content_words(s.body)]
        corpus._counts = corpus._Counts()
        corpus_idf(words)
        cold = time.perf_counter()
        idf = corpus_idf(words)
        looked_up = time.perf_counter()
        excerpt_stems.cache_clear()
        excerpt_sentences.cache_clear()  # the backing passages' excerpt sentences (passages.py)
        began, began_cpu = time.perf_counter(), time.thread_time()
        inputs = support_inputs(text, sources, idf=idf)
        record = finish_record(inputs, lexical_scores(inputs), method="lexical", min_score=0.5)
        done, done_cpu = time.perf_counter(), time.thread_time()
        if run >= 10:  # warm-up
            timings["pure_cpu"].append((done_cpu - began_cpu) * 1000)
            timings["retrieve_cpu"].append((retrieved_cpu - started_cpu) * 1000)
            timings["retrieve"].append((retrieved - started) * 1000)
            timings["lookup_cold"].append((cold - retrieved) * 1000)
            timings["lookup"].append((looked_up - cold) * 1000)
            timings["pure"].append((done - began) * 1000)
    out = {f"{k}_p50": statistics.median(v) for k, v in timings.items()}
    out |= {f"{k}_p95": sorted(v)[int(0.95 * (len(v) - 1))] for k, v in timings.items()}
    out["sentences"] = len(record["sentences"])
    out["pairs"] = sum(len(s["scores"]) or 5 for s in record["sentences"])
    out["text_chars"] = len(text)
    return out


def run_child() -> dict[str, Any]:
    import django

    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
    os.environ.setdefault("SECRET_KEY", "bench-only-not-secret")
    django.setup()
    from django.core.management import call_command

    from answers.content.demo import load_demo_corpus
    from answers.models import Chunk

    call_command("migrate", verbosity=0, skip_checks=True)
    load_demo_corpus()
    rows = [json.loads(line) for line in LABELED.read_text().splitlines() if line.strip()]
    excerpts = _excerpts()
    quality = _quality(rows, excerpts)
    return {
        "quality": quality,
        "cost": _cost(excerpts),
        "chunks": Chunk.objects.count(),
        "scores": [{k: r[k] for k in ("id", "kind", "supports", "score")} for r in rows],
    }


def _row(pr: dict[str, float]) -> str:
    return f"{pr['precision']:.2f} / {pr['recall']:.2f}"


def _markdown(result: dict[str, Any]) -> str:
    quality = result["quality"]
    cost = result["cost"]
    load = os.getloadavg()
    lines = [
        "## Support check (lexical)",
        "",
        f"`bench/bench_support.py`, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}, load average {load[0]:.2f} at the end. "
        f"{quality['pairs']} labeled (sentence, source) pairs over the demo corpus "
        f"({quality['documents']} topics, {result['chunks']} chunks; bench/support_labeled.jsonl). "
        "Clear cases: copied, paraphrase (technical terms kept), other topic. "
        "Precision / recall; aim 0.9 / 0.8 on clear cases.",
        "",
        "Scores by kind (min / median / max):",
        "",
        "| kind | pairs | min | median | max |",
        "|---|---:|---:|---:|---:|",
    ]
    for kind, s in quality["kinds"].items():
        lines.append(f"| {kind} | {s['n']} | {s['min']:.2f} | {s['median']:.2f} | {s['max']:.2f} |")
    lines += [
        "",
        "By bar (`ANSWERS_SUPPORT_MIN`): flagging `unsupported` (positive = the source does not support "
        "the sentence) and `grounded_by` (the supporting source listed among 5; random unrelated "
        "distractors, or the sentence's own retrieval neighbours).",
        "",
        "| bar | unsupported, clear | unsupported, all | grounded_by, clear | grounded_by, neighbours |",
        "|---:|---|---|---|---|",
    ]
    for entry in quality["sweep"]:
        lines.append(
            f"| {entry['bar']:.2f} | {_row(entry['unsupported_clear'])} | {_row(entry['unsupported_all'])} "
            f"| {_row(entry['grounded_random'])} | {_row(entry['grounded_retrieved'])} |"
        )
    lines += [
        "",
        f"Cost per answer ({cost['sentences']} sentences, {cost['pairs']} scored pairs, 5 sources x "
        f"{EXCERPT_CHARS:,} characters), {RUNS} runs in turns with `retrieve()` for a question on the same "
        "topic (SQLite FTS5, same process):",
        "",
        "| step | p50 (ms) | p95 (ms) | CPU p50 (ms, this thread) |",
        "|---|---:|---:|---:|",
        f"| support, pure (split, score, record) | {cost['pure_p50']:.2f} | {cost['pure_p95']:.2f} "
        f"| {cost['pure_cpu_p50']:.2f} |",
        f"| support, corpus look-up, counts cached (the usual case) | {cost['lookup_p50']:.2f} "
        f"| {cost['lookup_p95']:.2f} | |",
        f"| support, corpus look-up, first answer after the corpus changed | {cost['lookup_cold_p50']:.2f} "
        f"| {cost['lookup_cold_p95']:.2f} | |",
        f"| retrieve() | {cost['retrieve_p50']:.2f} | {cost['retrieve_p95']:.2f} "
        f"| {cost['retrieve_cpu_p50']:.2f} |",
        "",
        f"Support (pure + look-up) / retrieve, p50: "
        f"{(cost['pure_p50'] + cost['lookup_p50']) / cost['retrieve_p50']:.2f}x.",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    if "--child" in sys.argv:
        print(json.dumps(run_child()))
        return
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp}/bench.sqlite3"}
        out = subprocess.run(
            [sys.executable, __file__, "--child"], env=env, check=True, stdout=subprocess.PIPE, text=True
        ).stdout
    result = json.loads(out.strip().splitlines()[-1])
    RESULTS_JSON.write_text(json.dumps(result, indent=1) + "\n")
    text = _markdown(result)
    RESULTS.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
