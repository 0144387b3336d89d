"""The site's content (documents and their chunks) and the answers' citation trail.

One module per area; everything is importable from `answers.models` as before (migrations and
imports alike).
"""

from answers.models.answers import Answer, AnswerSource, SourceStatus
from answers.models.conversations import Conversation
from answers.models.documents import Chunk, Document, DocumentAccess
from answers.models.embeddings import ChunkEmbedding
from answers.models.evaluation import EvaluationItem, EvaluationResult, EvaluationRun, EvaluationSet
from answers.models.feedback import FEEDBACK_COMMENT_MAX_LENGTH, Feedback, FeedbackVerdict
from answers.models.reviews import Review, ReviewSourceFlag, ReviewVerdict, SourceFlag

__all__ = [
    "FEEDBACK_COMMENT_MAX_LENGTH",
    "Answer",
    "AnswerSource",
    "Chunk",
    "ChunkEmbedding",
    "Conversation",
    "Document",
    "DocumentAccess",
    "EvaluationItem",
    "EvaluationResult",
    "EvaluationRun",
    "EvaluationSet",
    "Feedback",
    "FeedbackVerdict",
    "Review",
    "ReviewSourceFlag",
    "ReviewVerdict",
    "SourceFlag",
    "SourceStatus",
]
