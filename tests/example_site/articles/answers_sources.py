"""What of the example site is content for the answers app (found by answers' autodiscovery)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import Q, QuerySet

import answers.content
from tests.example_site.articles.models import MEMBERS_GROUP, Article


class ArticleSource(answers.content.Source):
    body_format = "markdown"

    def get_queryset(self) -> QuerySet[Any]:
        # Published articles, and drafts staff preview; nothing else is content.
        return Article.objects.select_related("category").filter(Q(published=True) | Q(staff_draft=True))

    def title(self, obj: Article) -> str:
        return obj.title

    def body(self, obj: Article) -> str:
        return obj.body

    def updated_at(self, obj: Article) -> datetime | None:
        return obj.updated_at

    def access(self, obj: Article) -> str | list[str]:
        if not obj.published:
            return "staff"
        if obj.category is not None and obj.category.members_only:
            return [MEMBERS_GROUP]
        return "public"


answers.content.register(Article, ArticleSource)
