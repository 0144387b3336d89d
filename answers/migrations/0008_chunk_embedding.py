# Chunk vectors for dense retrieval (answers.retrieval.dense).
#
# The table itself is vendor-neutral (SQLite keeps float32s in `vector`). On
# PostgreSQL with ANSWERS_EMBEDDINGS on, the pgvector extension, the `embedding`
# column and its HNSW cosine index are added too (dense.ensure_schema, which
# fails with a clear message when the server has no pgvector); with embeddings
# off nothing more happens, and `embed` adds them later when they are turned on.
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

from answers.retrieval import dense


def add_vector_column(apps, schema_editor):
    dimensions = int(getattr(settings, "ANSWERS_EMBEDDING_DIMENSIONS", 0) or 0)
    if getattr(settings, "ANSWERS_EMBEDDINGS", "none") != "openai" or dimensions < 1:
        return
    dense.ensure_schema(dimensions=dimensions, conn=schema_editor.connection)


class Migration(migrations.Migration):
    dependencies = [
        ("answers", "0007_answer_normalized"),
    ]

    operations = [
        migrations.CreateModel(
            name="ChunkEmbedding",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("model", models.CharField(db_index=True, max_length=200)),
                ("dimensions", models.PositiveIntegerField()),
                ("vector", models.BinaryField(blank=True, null=True)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "chunk",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE, related_name="embedding", to="answers.chunk"
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.CheckConstraint(
                        condition=models.Q(("dimensions__gte", 1)), name="chunkembedding_dimensions_positive"
                    )
                ],
            },
        ),
        migrations.RunPython(add_vector_column, migrations.RunPython.noop),
    ]
