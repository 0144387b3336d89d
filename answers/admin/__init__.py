"""The QA admin: every model's admin page is registered here, so Django's autodiscover finds them all.

- `answers`: the answer list and the read-only answer page (its panels in `panels/`, one module each).
- `reviews`: reviewers' verdicts, the only thing they write, append-only (a review resolves feedback); the
  form shows the answer under review.
- `feedback`: readers' feedback, read-only; reviewers may mark it resolved.
- `documents`: the site's content, read-only.
- `conversations`: conversations (first question, turns, asker) and each turn as read, read-only; the
  answer page's conversation panel.
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

# No navigation sidebar: QA reviewers work in wide lists (the answers', with their filters) that must fit a
# 1280 px window; the breadcrumbs and the index lead everywhere the sidebar did.
admin.site.enable_nav_sidebar = False

admin.site.register(Answer, AnswerAdmin)
admin.site.register(Review, ReviewAdmin)
admin.site.register(Document, DocumentAdmin)
admin.site.register(Feedback, FeedbackAdmin)
admin.site.register(Conversation, ConversationAdmin)
admin.site.register(EvaluationSet, EvaluationSetAdmin)
admin.site.register(EvaluationItem, EvaluationItemAdmin)
admin.site.register(EvaluationRun, EvaluationRunAdmin)
admin.site.register(EvaluationResult, EvaluationResultAdmin)
