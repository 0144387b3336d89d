"""Articles in categories; a category may be for members only, an article may be a draft staff preview."""

from __future__ import annotations

from django.db import models

MEMBERS_GROUP = "Members"


class Category(models.Model):
    name = models.CharField(max_length=100)
    members_only = models.BooleanField(default=False)

    def __str__(self) -> str:
        return self.name


class Article(models.Model):
    title = models.CharField(max_length=200)
    slug = models.SlugField(unique=True)
    body = models.TextField(help_text="Markdown.")
    category = models.ForeignKey(Category, null=True, blank=True, on_delete=models.SET_NULL)
    published = models.BooleanField(default=False)
    # A draft staff may preview; the public never sees it until it is published.
    staff_draft = models.BooleanField(default=False)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return self.title

    def get_absolute_url(self) -> str:
        return f"/articles/{self.slug}/"
