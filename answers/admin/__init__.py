"""The QA admin: every model's admin page is registered here, so Django's autodiscover finds them all.

- `answers`: the answer list and the read-only answer page (its panels in `panels/`, one module each).
- `reviews`: reviewers' verdicts, the only thing they write, append-only (a review resolves feedback).
- `feedback`: readers' feedback, read-only; reviewers may mark it resolved.
- `documents`: the site's content, read-only.
- `conversations`: conversations and their turns, read-only; the answer page's conversation panel.
- `health`: the citation health page (served by the answer admin).
- `exports`: CSV/XLSX/JSON exports of the answer, review and feedback lists (django-import-export).
- `evaluation`: evaluation sets and items, runs and their results, the answer list's *Add to evaluation set…*.
- `selectors`: the read queries behind these pages (they read the stored `AnswerSource.renumbered`).
"""

from __future__ import annotations

from django.contrib import admin

from answers.admin.answers import AnswerAdmin
from answers.admin.conversations import ConversationAdmin
from answers.admin.documents import DocumentAdmin
from answers.admin.evaluation import (
    EvaluationItemAdmin,
    EvaluationResultAdmin,
    EvaluationRunAdmin,
    EvaluationSetAdmin,
)
from answers.admin.feedback import FeedbackAdmin
from answers.admin.reviews import ReviewAdmin
from answers.models import (
    Answer,
    Conversation,
    Document,
    EvaluationItem,
    EvaluationResult,
    EvaluationRun,
    EvaluationSet,
    Feedback,
    Review,
)

admin.site.register(Answer, AnswerAdmin)
admin.site.register(Review, ReviewAdmin)
admin.site.register(Document, DocumentAdmin)
admin.site.register(Feedback, FeedbackAdmin)
admin.site.register(Conversation, ConversationAdmin)
admin.site.register(EvaluationSet, EvaluationSetAdmin)
admin.site.register(EvaluationItem, EvaluationItemAdmin)
admin.site.register(EvaluationRun, EvaluationRunAdmin)
admin.site.register(EvaluationResult, EvaluationResultAdmin)
