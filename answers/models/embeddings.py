"""A chunk's vector for dense retrieval (answers.retrieval.dense)."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from answers.models.documents import Chunk


class ChunkEmbedding(models.Model):
    """A chunk's vector and the model it came from (answers.retrieval.dense; one per chunk).

    `vector` holds little-endian float32s (the SQLite search reads it). On PostgreSQL
    with embeddings on, migration 0007 adds a pgvector `halfvec` column `embedding` that holds
    the vector instead (with an HNSW cosine index per dimension); `vector` stays empty.
    Deleting a chunk (so a document) deletes its vector.
    """

    chunk = models.OneToOneField(Chunk, on_delete=models.CASCADE, related_name="embedding")
    model = models.CharField(max_length=200, db_index=True)
    dimensions = models.PositiveIntegerField()
    vector = models.BinaryField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(dimensions__gte=1), name="chunkembedding_dimensions_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.chunk_id} ({self.model})"
