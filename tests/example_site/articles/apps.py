"""The example site's articles: what its answers are drawn from."""

from django.apps import AppConfig


class ArticlesConfig(AppConfig):
    name = "tests.example_site.articles"
    label = "articles"
    default_auto_field = "django.db.models.BigAutoField"
