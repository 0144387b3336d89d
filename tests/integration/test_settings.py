"""Settings come from the environment; production without a secret key refuses to start."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.checks import run_checks
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from answers.checks import CHECKS
from answers.citations.normalize import DIALECTS
from answers.conf import NUMBER, PROVIDERS, RERANKERS, SUPPORT_METHODS, WHOLE_NUMBER, conf, settings_table
from answers.plugins import plugin_class
from answers.providers.extractive import ExtractiveProvider
from answers.providers.registry import get_provider
from answers.retrieval.pipeline import get_reranker
from answers.retrieval.rerank import LexicalOnlyReranker
from answers.support.compute import get_support_method
from answers.support.methods import LexicalMethod

ROOT = Path(__file__).resolve().parents[2]
SETTING_NAMES = sorted(setting.name for setting in settings_table())
ENV_NAMES = {setting.env_name for setting in settings_table()}


def _import_settings(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "DEBUG", "DATABASE_URL"}}
    clean.update(env)
    return subprocess.run(
        [sys.executable, "-c", "import project.settings as s; print(s.DEBUG, s.ALLOWED_HOSTS)"],
        cwd=ROOT,
        env=clean,
        capture_output=True,
        text=True,
        check=False,
    )


def test_without_debug_and_without_secret_key_the_app_refuses_to_start():
    result = _import_settings({})
    assert result.returncode != 0
    assert "SECRET_KEY is not set" in result.stderr


def test_debug_gives_development_defaults():
    result = _import_settings({"DEBUG": "true"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().startswith("True")
    assert "localhost" in result.stdout


def test_production_hosts_come_from_the_environment():
    result = _import_settings({"SECRET_KEY": "s", "ALLOWED_HOSTS": "example.org,www.example.org"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False ['example.org', 'www.example.org']"


def test_a_bad_boolean_is_reported_by_name():
    result = _import_settings({"DEBUG": "maybe"})
    assert result.returncode != 0
    assert "DEBUG must be a boolean" in result.stderr


@pytest.mark.parametrize(
    ("overrides", "expected_ids"),
    [
        ({}, []),
        ({"ANSWERS_PROVIDER": "nope"}, ["answers.E001"]),
        ({"ANSWERS_PROVIDER": "no.such.Provider"}, ["answers.E001"]),
        ({"ANSWERS_PROVIDER": "answers.providers.extractive.ExtractiveProvider"}, []),
        ({"ANSWERS_PROVIDER": "answers.conf.conf"}, ["answers.E047"]),  # loads, but no provider class
        ({"ANSWERS_RERANKER": "answers.retrieval.rerank.LexicalOnlyReranker"}, []),
        ({"ANSWERS_RERANKER": "answers.retrieval.rerank.Passage"}, ["answers.E048"]),
        ({"ANSWERS_SUPPORT_METHOD": "answers.support.methods.LexicalMethod"}, []),
        ({"ANSWERS_SUPPORT_METHOD": "answers.support.methods.SupportInputs"}, ["answers.E049"]),
        ({"ANSWERS_MAX_SOURCES": 0}, ["answers.E002"]),
        ({"ANSWERS_MIN_SCORE": 1.5}, ["answers.E003"]),
        ({"ANSWERS_PROVIDER_TIMEOUT": 0}, ["answers.E004"]),
        ({"ANSWERS_ANON_RATE": "lots"}, ["answers.E005"]),
        ({"ANSWERS_EXTRACTIVE_DELAY_MS": -1}, ["answers.E006"]),
        ({"ANSWERS_RERANKER": "no.such.Reranker"}, ["answers.E007"]),
        ({"ANSWERS_RERANKER": "none"}, []),
        ({"ANSWERS_STALE_AFTER": 0}, ["answers.E008"]),
        ({"ANSWERS_SHUTDOWN_GRACE": -1}, ["answers.E009"]),
        ({"ANSWERS_STREAM_DB_WORKERS": 0}, ["answers.E010"]),
        ({"ANSWERS_PIPELINE_DB_WORKERS": 0}, ["answers.E011"]),
        ({"ANSWERS_REQUEST_THREADS": -1}, ["answers.E039"]),
        ({"ANSWERS_MAX_GENERATING": -1}, ["answers.E050"]),
        ({"ANSWERS_REQUEST_THREADS": 0}, []),
        ({"DATABASE_POOL_SIZE": -1}, ["answers.E012"]),
        ({"DATABASE_POOL_SIZE": 0}, []),
        ({"DATABASE_POOL_TIMEOUT": 0}, ["answers.E013"]),
        ({"ANSWERS_MARKER_DIALECTS": "double, nope"}, ["answers.E014"]),
        ({"ANSWERS_MARKER_DIALECTS": "all,none"}, ["answers.E014"]),
        ({"ANSWERS_MARKER_DIALECTS": "none"}, []),
        ({"ANSWERS_MARKER_DIALECTS": "fullwidth, dagger,footnote-definition"}, []),
        ({"ANSWERS_SUPPORT_METHOD": "no.such.Method"}, ["answers.E015"]),
        ({"ANSWERS_SUPPORT_METHOD": "judge"}, []),
        ({"ANSWERS_SUPPORT_MIN": 1.5}, ["answers.E016"]),
        ({"ANSWERS_SUPPORT_MIN": -0.1}, ["answers.E016"]),
        ({"ANSWERS_EMBEDDINGS": "magic"}, ["answers.E020"]),
        ({"ANSWERS_EMBEDDINGS": "openai", "ANSWERS_EMBEDDING_DIMENSIONS": 64}, ["answers.E021"]),
        ({"ANSWERS_EMBEDDINGS": "openai", "ANSWERS_EMBEDDING_MODEL": "m"}, ["answers.E022"]),
        (
            {
                "ANSWERS_EMBEDDINGS": "openai",
                "ANSWERS_EMBEDDING_MODEL": "m",
                "ANSWERS_EMBEDDING_DIMENSIONS": 8,
            },
            [],
        ),
        ({"ANSWERS_EMBEDDINGS_TIMEOUT": 0}, ["answers.E023"]),
        ({"ANSWERS_PGVECTOR_INDEX": "ivf"}, ["answers.E024"]),
        ({"ANSWERS_NO_SOURCES": "shrug"}, ["answers.E033"]),
        ({"ANSWERS_NO_SOURCES": "answer"}, []),
        ({"ANSWERS_DECLINE_TEXT": "   "}, ["answers.E034"]),
        ({"ANSWERS_DECLINE_TEXT": "Nothing here covers this [1]."}, ["answers.E034"]),
        ({"ANSWERS_DECLINE_TEXT": "Nothing here covers this【1】."}, ["answers.E034"]),
        ({"ANSWERS_DECLINE_TEXT": "Nothing on this site covers that question."}, []),
        ({"ANSWERS_MAX_TOKENS": 0}, ["answers.E036"]),
        ({"ANSWERS_MAX_ANSWER_CHARS": 0}, ["answers.E037"]),
        ({"ANSWERS_MAX_TOKENS": 1, "ANSWERS_MAX_ANSWER_CHARS": 1}, []),
        ({"ANSWERS_CONVERSATION_TURNS": 0}, ["answers.E045"]),
        ({"ANSWERS_CONVERSATION_TURNS": 1}, []),
        ({"ANSWERS_CONVERSATION_HISTORY_CHARS": -1}, ["answers.E046"]),
        ({"ANSWERS_CONVERSATION_HISTORY_CHARS": 0}, []),
        # A value its setting's parser cannot read is that setting's check's error, not a crash.
        ({"ANSWERS_MAX_SOURCES": "many"}, ["answers.E002"]),
        ({"ANSWERS_MIN_SCORE": "high"}, ["answers.E003"]),
        ({"ANSWERS_EMBEDDINGS_TIMEOUT": "soon"}, ["answers.E023"]),
        ({"ANSWERS_EVENT_RETENTION": "a week"}, ["answers.E027"]),
        (
            {"ANSWERS_CONVERSATION_TURNS": "20 turns", "ANSWERS_SHUTDOWN_GRACE": -1},
            ["answers.E045", "answers.E009"],
        ),
        # The openai and anthropic endpoints, checked as cohere's and mistral's are.
        ({"ANSWERS_PROVIDER": "openai", "ANSWERS_OPENAI_API_KEY": "", "ANSWERS_OPENAI_BASE_URL": ""}, []),
        ({"ANSWERS_PROVIDER": "openai", "ANSWERS_OPENAI_API_KEY": "sk two"}, ["answers.E067"]),
        ({"ANSWERS_PROVIDER": "openai", "ANSWERS_OPENAI_BASE_URL": "localhost:11434/v1"}, ["answers.E068"]),
        ({"ANSWERS_PROVIDER": "openai", "ANSWERS_OPENAI_BASE_URL": "http://127.0.0.1:11434/v1"}, []),
        ({"ANSWERS_PROVIDER": "extractive", "ANSWERS_OPENAI_BASE_URL": "not checked while unused"}, []),
        (
            {"ANSWERS_PROVIDER": "anthropic", "ANSWERS_MODEL": "", "ANSWERS_ANTHROPIC_API_KEY": ""},
            ["answers.E017", "answers.E069"],
        ),
        (
            {"ANSWERS_PROVIDER": "anthropic", "ANSWERS_MODEL": "m", "ANSWERS_ANTHROPIC_API_KEY": "sk-ant\n"},
            ["answers.E069"],
        ),
        (
            {
                "ANSWERS_PROVIDER": "anthropic",
                "ANSWERS_MODEL": "m",
                "ANSWERS_ANTHROPIC_API_KEY": "sk-ant",
                "ANSWERS_ANTHROPIC_BASE_URL": "gateway.example",
            },
            ["answers.E070"],
        ),
        ({"ANSWERS_PROVIDER": "anthropic", "ANSWERS_MODEL": "m", "ANSWERS_ANTHROPIC_API_KEY": "sk-ant"}, []),
    ],
)
def test_each_bad_setting_fails_its_own_check(overrides, expected_ids):
    with override_settings(**overrides):
        ids = [m.id for m in run_checks() if m.id and m.id.startswith("answers.")]
    assert ids == expected_ids


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("all", DIALECTS),
        ("", DIALECTS),
        ("none", ()),
        (" double , fullwidth ", ("double", "fullwidth")),
        (["label"], ("label",)),
    ],
)
def test_marker_dialects_are_read_from_the_setting(value, expected):
    with override_settings(ANSWERS_MARKER_DIALECTS=value):
        dialects = conf.MARKER_DIALECTS
    assert dialects == expected


def test_an_unknown_provider_stops_the_app_at_startup():
    env = {**os.environ, "ANSWERS_PROVIDER": "nope", "DEBUG": "true"}
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import django, os; os.environ['DJANGO_SETTINGS_MODULE']='project.settings'; django.setup()",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode != 0
    assert "ANSWERS_PROVIDER is 'nope'" in result.stderr


@override_settings(ANSWERS_PROVIDER="extractive", ANSWERS_EXTRACTIVE_DELAY_MS=15)
def test_get_provider_builds_extractive_from_settings() -> None:
    provider = get_provider()

    assert isinstance(provider, ExtractiveProvider)
    assert provider.delay_ms == 15
    assert get_provider("extractive") is not provider


@override_settings(
    ANSWERS_PROVIDER="answers.providers.extractive.ExtractiveProvider",
    ANSWERS_RERANKER="answers.retrieval.rerank.LexicalOnlyReranker",
    ANSWERS_SUPPORT_METHOD="answers.support.methods.LexicalMethod",
)
def test_each_plugin_setting_takes_a_class_dotted_path_as_well_as_a_builtin_name() -> None:
    assert isinstance(get_provider(), ExtractiveProvider)
    assert isinstance(get_reranker(), LexicalOnlyReranker)
    assert isinstance(get_support_method(), LexicalMethod)


@pytest.mark.parametrize(
    ("builtins", "needs"),
    [(PROVIDERS, ("from_settings", "stream")), (RERANKERS, ("score",)), (SUPPORT_METHODS, ("scores",))],
)
def test_every_builtin_plugin_loads_as_a_class_with_what_the_pipeline_calls(builtins, needs) -> None:
    for name in builtins:
        found = plugin_class("ANSWERS_X", name, builtins)
        assert isinstance(found, type)
        assert all(hasattr(found, attribute) for attribute in needs), name


def test_a_plugin_path_that_does_not_load_is_improperly_configured() -> None:
    with pytest.raises(ImproperlyConfigured, match=r"ANSWERS_RERANKER is 'no.such.Reranker'.*lexical, none"):
        plugin_class("ANSWERS_RERANKER", "no.such.Reranker", RERANKERS)


# --- One source per setting: answers.conf's table


def test_without_an_environment_the_project_spells_no_setting_of_the_app() -> None:
    """project/settings.py passes on what the environment says and nothing else: each default is conf's."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ANSWERS_") and k not in ENV_NAMES}
    script = "import sys, project.settings as s; print(sorted(set(dir(s)) & set(sys.argv[1:])))"
    result = subprocess.run(
        [sys.executable, "-c", script, *SETTING_NAMES],
        cwd=ROOT,
        env={**clean, "SECRET_KEY": "s"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.strip() == "[]"


def test_the_environment_reaches_the_app_as_written_and_conf_parses_it() -> None:
    script = (
        "import django, os; os.environ['DJANGO_SETTINGS_MODULE'] = 'project.settings'; django.setup(); "
        "from answers.conf import conf; "
        "print(repr((conf.MAX_SOURCES, conf.TRUSTED_PROXIES, conf.OPENAI_API_KEY, conf.EMBEDDINGS_API_KEY)))"
    )
    env = {
        **os.environ,
        "DEBUG": "true",
        "ANSWERS_MAX_SOURCES": " 7 ",
        "ANSWERS_TRUSTED_PROXIES": "10.0.0.0/8, 127.0.0.1",
        "OPENAI_API_KEY": "sk-env",
    }
    env.pop("ANSWERS_EMBEDDINGS_API_KEY", None)
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "(7, ('10.0.0.0/8', '127.0.0.1'), 'sk-env', 'sk-env')"


def test_a_number_the_environment_gets_wrong_is_reported_by_its_check_not_a_crash() -> None:
    env = {**os.environ, "DEBUG": "true", "ANSWERS_STALE_AFTER": "a minute"}
    result = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    assert result.returncode == 1
    assert "(answers.E008) ANSWERS_STALE_AFTER is 'a minute', which is not a number." in result.stderr
    assert "Traceback" not in result.stderr


def test_an_unset_setting_reads_its_fallback_then_its_default() -> None:
    with override_settings(ANSWERS_OPENAI_BASE_URL="http://127.0.0.1:11434/v1"):
        assert conf.EMBEDDINGS_BASE_URL == "http://127.0.0.1:11434/v1"
        with override_settings(ANSWERS_EMBEDDINGS_BASE_URL="http://127.0.0.1:8080/v1"):
            assert conf.EMBEDDINGS_BASE_URL == "http://127.0.0.1:8080/v1"
    with override_settings(ANSWERS_OPENAI_BASE_URL="", ANSWERS_EMBEDDINGS_BASE_URL="  "):
        assert conf.EMBEDDINGS_BASE_URL is None


def test_every_check_id_the_table_names_exists_and_every_check_is_listed() -> None:
    source = (ROOT / "answers" / "checks.py").read_text()
    reported = set(re.findall(r'"(answers\.E\d{3})"', source.split("CHECKS = {", 1)[1].split("\n}\n", 1)[1]))
    named = {check for setting in settings_table() for check in setting.checks}
    assert named <= set(CHECKS), named - set(CHECKS)
    # Each id is reported by checks.py itself or through the table (bounds, endpoints, plug-ins).
    assert set(CHECKS) == reported | named, set(CHECKS) ^ (reported | named)


def test_every_setting_a_parser_can_refuse_has_a_check_to_report_it() -> None:
    refusable = [s.name for s in settings_table() if s.parser in (WHOLE_NUMBER, NUMBER) and not s.checks]
    assert refusable == []
    assert len({s.name for s in settings_table()}) == len(settings_table())
    assert len({s.env_name for s in settings_table()}) == len(settings_table())
