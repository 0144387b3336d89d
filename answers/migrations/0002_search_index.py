# Full-text search index over chunks (filled in by the retrieval work).
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("answers", "0001_initial")]

    operations: list = []
