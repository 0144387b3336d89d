"""The example site's articles as content: saving, editing, unpublishing, deleting and `reindex`."""

from __future__ import annotations

import io
import logging
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.db.models.signals import post_delete, post_save
from django.test import override_settings

from answers.content.indexing import reindex
from answers.models import Chunk, ChunkEmbedding, Document
from tests.example_site.articles.models import Article, Category
from tests.fixtures.embeddings_server import StubEmbeddingsServer, embeddings_settings

pytestmark = pytest.mark.django_db


def document_of(article: Article) -> Document | None:
    return Document.objects.filter(source="articles.article", key=f"articles.article:{article.pk}").first()


def test_saving_an_article_indexes_it_with_its_access(site):
    public, members, draft = (document_of(a) for a in (site.public, site.members, site.draft))
    assert public is not None
    assert members is not None
    assert draft is not None
    assert (public.title, public.url, public.access) == (
        "Garden compost guide",
        "/articles/compost/",
        "public",
    )
    assert (members.access, members.access_groups) == ("groups", ["Members"])
    assert draft.access == "staff"
    assert Chunk.objects.filter(document=members, text__contains="nine days").exists()


def test_editing_an_article_updates_its_document_and_chunks(site, django_capture_on_commit_callbacks):
    site.public.body = "# Compost\n\nA compost heap wants shredded cardboard in autumn."
    with django_capture_on_commit_callbacks(execute=True):
        site.public.save()

    document = document_of(site.public)
    assert document is not None
    assert "cardboard" in document.body
    assert Chunk.objects.filter(document=document, text__contains="cardboard").exists()
    assert not Chunk.objects.filter(document=document, text__contains="aerobic").exists()


def test_a_save_that_changes_nothing_indexed_keeps_the_document_and_its_chunks(
    site, django_capture_on_commit_callbacks
):
    before = document_of(site.members)
    chunk_ids = list(Chunk.objects.filter(document=before).values_list("id", flat=True))
    with django_capture_on_commit_callbacks(execute=True):
        site.members.save()  # updated_at moves; nothing the document is built from does

    after = document_of(site.members)
    assert after is not None
    assert before is not None
    assert after.updated_at == before.updated_at
    assert list(Chunk.objects.filter(document=after).values_list("id", flat=True)) == chunk_ids


def test_moving_an_article_changes_its_documents_access(site, django_capture_on_commit_callbacks):
    site.members.published, site.members.staff_draft = False, True
    with django_capture_on_commit_callbacks(execute=True):
        site.members.save()

    document = document_of(site.members)
    assert document is not None
    assert (document.access, document.access_groups) == ("staff", [])


def test_unpublishing_and_deleting_remove_the_document(site, django_capture_on_commit_callbacks):
    site.public.published = False
    with django_capture_on_commit_callbacks(execute=True):
        site.public.save()
        site.draft.delete()

    assert document_of(site.public) is None
    assert not Document.objects.filter(key=f"articles.article:{site.draft.pk}").exists()
    assert not Chunk.objects.filter(text__contains="Orchard").exists()
    assert document_of(site.members) is not None


def test_nothing_is_indexed_before_the_sites_transaction_commits(django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        Article.objects.create(title="Pond care", slug="pond", published=True, body="Ponds need shade.")
        assert not Document.objects.filter(source="articles.article").exists()
    assert len(callbacks) == 1


def test_reindex_adds_updates_and_removes_what_saves_did_not_see(site):
    # Queryset writes send no signals: the documents fall behind until `reindex`.
    Article.objects.filter(pk=site.public.pk).update(title="Garden compost handbook")
    Article.objects.filter(pk=site.draft.pk).update(staff_draft=False)
    Article.objects.bulk_create(
        [Article(title="Pond care", slug="pond", published=True, body="Ponds need shade.")]
    )
    out = io.StringIO()

    call_command("reindex", "articles.Article", "--no-progress", stdout=out)

    assert out.getvalue().strip() == "added 1, updated 1, unchanged 1, removed 1, failed 0"
    assert document_of(site.public).title == "Garden compost handbook"  # type: ignore[union-attr]
    assert document_of(site.draft) is None
    assert Document.objects.filter(source="articles.article", title="Pond care").exists()


def test_reindex_again_changes_nothing(site):
    out = io.StringIO()
    call_command("reindex", "--no-progress", stdout=out)
    assert out.getvalue().strip() == "added 0, updated 0, unchanged 3, removed 0, failed 0"


def test_reindex_refuses_a_model_that_is_not_registered(site):
    with pytest.raises(
        CommandError, match=r"not registered: articles\.category \(registered: articles\.article\)"
    ):
        call_command("reindex", "articles.Category", "--no-progress")


def test_an_article_that_cannot_be_indexed_never_fails_its_save(
    site, django_capture_on_commit_callbacks, caplog
):
    site.public.body = "   "  # no text: not a document
    with (
        caplog.at_level(logging.ERROR, logger="answers.content.indexing"),
        django_capture_on_commit_callbacks(execute=True),
    ):
        site.public.save()

    assert Article.objects.get(pk=site.public.pk).body == "   "
    assert "could not index articles.article" in caplog.text
    err = io.StringIO()
    with pytest.raises(CommandError, match="1 object"):
        call_command("reindex", "--no-progress", stdout=io.StringIO(), stderr=err)
    assert f"articles.article:{site.public.pk}: body: is empty." in err.getvalue()


def _saved_pond_article(capture_on_commit_callbacks: Any) -> Article:
    """An article saved as a site saves one, its on-commit indexing run."""
    with capture_on_commit_callbacks(execute=True):
        return Article.objects.create(
            title="Pond care", slug="pond", published=True, body="Ponds need shade and oxygenating plants."
        )


def test_an_embeddings_outage_during_a_save_is_caught_up_by_reindex(django_capture_on_commit_callbacks):
    with StubEmbeddingsServer() as server, override_settings(**embeddings_settings(server)):
        server.fail_next(3, status=503)  # every attempt of the save's one request
        article = _saved_pond_article(django_capture_on_commit_callbacks)
        document = document_of(article)
        assert document is not None  # the save and the document stand; only the vectors are missing
        chunks = Chunk.objects.filter(document=document)
        assert chunks.exists()
        assert not ChunkEmbedding.objects.filter(chunk__in=chunks).exists()
        if connection.vendor != "sqlite":
            # Vectors on PostgreSQL need pgvector, which the test server may lack: the pgvector
            # server of tests/integration/test_dense_pgvector.py covers storing them there.
            pytest.skip("the catch-up's vectors are checked on SQLite")

        report = reindex()

        assert report.embeddings is not None
        assert report.embeddings.problem is None
        assert ChunkEmbedding.objects.filter(chunk__in=chunks).count() == chunks.count()


def test_an_edit_replaces_the_chunks_and_their_vectors(django_capture_on_commit_callbacks):
    if connection.vendor != "sqlite":
        pytest.skip("vectors on PostgreSQL need pgvector (tests/integration/test_dense_pgvector.py)")
    with StubEmbeddingsServer() as server, override_settings(**embeddings_settings(server)):
        article = _saved_pond_article(django_capture_on_commit_callbacks)
        old = set(Chunk.objects.filter(document=document_of(article)).values_list("id", flat=True))
        assert ChunkEmbedding.objects.filter(chunk_id__in=old).count() == len(old)

        article.body = "# Ponds\n\nA pond wants a pump in summer.\n\n# Frogs\n\nFrogs spawn in March."
        with django_capture_on_commit_callbacks(execute=True):
            article.save()

        chunks = Chunk.objects.filter(document=document_of(article))
        assert [c.heading for c in chunks] == ["Ponds", "Frogs"]
        assert not Chunk.objects.filter(id__in=old).exists()
        assert not ChunkEmbedding.objects.filter(chunk_id__in=old).exists()
        # The new chunks got their vectors as the save committed.
        assert ChunkEmbedding.objects.filter(chunk__in=chunks).count() == 2


def test_only_registered_models_have_save_and_delete_receivers(site):
    assert post_save.has_listeners(Article)
    assert post_delete.has_listeners(Article)
    # Any other model keeps Django's fast delete (no delete receiver: rows are not read first).
    assert not post_delete.has_listeners(Category)
    assert not post_delete.has_listeners(Chunk)
