"""Web views: the health probe, the ask page, its no-JS path, permalinks (streams: answers.sse.views)."""

from __future__ import annotations

import math
import re
import uuid
from typing import Any

from asgiref.sync import sync_to_async
from django.db import DatabaseError, connection
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseBase,
    HttpResponseRedirect,
    JsonResponse,
)
from django.template.response import TemplateResponse
from django.templatetags.static import static
from django.urls import reverse
from django.utils.cache import patch_cache_control
from django.views.decorators.http import require_POST, require_safe

from answers import examples, payloads, selectors
from answers.api.throttles import AskAnonThrottle, AskUserThrottle, FeedbackAnonThrottle
from answers.auth import AuthenticationFailed, challenge, request_user
from answers.conf import conf
from answers.conversations.selectors import conversation_get, conversation_turns, earlier_questions
from answers.conversations.services import (
    Asker,
    ConversationNotFound,
    ConversationRefused,
    NotConversationOwner,
)
from answers.excerpts import excerpt_pieces
from answers.feedback import anonymous_client
from answers.forms import AskForm
from answers.models import Answer
from answers.pipeline import flow, lifecycle
from answers.pipeline.publisher import JSON
from answers.pipeline.store import AnswerDeleted
from answers.questions import MAX_LENGTH as MAX_QUESTION_LENGTH
from answers.rendering import link_url, markdown_without_html, source_anchor
from answers.sse.channels import events_url, stream_refusal
from answers.sse.views import method_refusal

FAVICON_MAX_AGE = 24 * 60 * 60


def _ping_database() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()


async def healthz(request: HttpRequest) -> JsonResponse:
    """200 once the database answers; 503 with the reason when it does not, or while stopping."""
    if lifecycle.is_shutting_down():
        return JsonResponse({"status": "unavailable", "reason": "the server is stopping"}, status=503)
    try:
        await sync_to_async(_ping_database)()
    except DatabaseError as exc:
        return JsonResponse(
            {"status": "unavailable", "reason": f"database: {exc.__class__.__name__}: {exc}".strip()},
            status=503,
        )
    return JsonResponse({"status": "ok"})


def _page(request: HttpRequest, template: str, context: dict[str, Any], status: int = 200) -> HttpResponse:
    # The Content-Security-Policy and Referrer-Policy headers come from middleware (project/settings.py).
    return TemplateResponse(request, template, context, status=status).render()


def _answer_context(answer: Answer | None, user: Any = None, *, turn: int = 1) -> dict[str, Any]:
    """What the answer block of a page shows: status, final text as sanitized HTML, Sources list.

    Sources `user` may no longer read are listed by number only (selectors.answer_redaction).
    `turn`: its turn on a thread page (ids and source anchors unique per turn; 1 keeps a single
    answer's ids).
    """
    id_prefix = "" if turn <= 1 else f"turn-{turn}-"
    if answer is None:
        return {
            "answer": None,
            "status": "",
            "references": [],
            "retrieved": [],
            "answer_html": "",
            "declined": False,
            "turn": turn,
            "id_prefix": id_prefix,
        }
    passages = payloads.source_passages(answer)
    redaction = selectors.answer_redaction(answer=answer, user=user)
    references = [
        ref
        if ref.get("withheld")
        else {
            **ref,
            "anchor": source_anchor(ref["number"], turn),
            "link": link_url(ref["url"]),
            # The excerpt's window, the passages that back the answer marked (answers/excerpts.py).
            "excerpt_pieces": excerpt_pieces(ref["excerpt"], passages.get(ref["number"], ())),
        }
        for ref in payloads.answer_references(answer, redaction)
    ]
    # The same passage under two titles is shown once (payloads.same_passages).
    by_number = {ref["number"]: ref for ref in references}
    for number, earlier in payloads.same_passages(references).items():
        by_number[number]["same_as"] = earlier
        by_number[earlier].setdefault("also", []).append(by_number[number])
    done = answer.status == Answer.Status.DONE
    in_flight = answer.status in (Answer.Status.PENDING, Answer.Status.STREAMING)
    return {
        "answer": answer,
        "status": answer.status,
        # While the answer is written, no source has its final number yet: the retrieved ones are
        # listed apart, unnumbered (the script numbers them as they are cited).
        "references": [] if in_flight else references,
        "retrieved": references if in_flight else [],
        # No source reached the threshold: the decline text, no Sources list (docs/reference/page-hooks.md).
        "declined": done and answer.declined,
        "answer_html": payloads.answer_html(answer, reference_count=len(references), turn=turn)
        if done
        else "",
        "turn": turn,
        "id_prefix": id_prefix,
        # A shared link opened while the answer is still being written joins its stream.
        "events_url": events_url(answer.id) if in_flight and answer.delivery == Answer.Delivery.SSE else "",
    }


def _ask_page(request: HttpRequest, form: AskForm, status: int = 200) -> HttpResponse:
    """The ask page's first screen: the form, what answers are drawn from, example questions."""
    context = {
        "form": form,
        "first_screen": examples.first_screen_get(),
        "turns": [_answer_context(None)],
        "conversation": None,
        **_answer_context(None),
    }
    return _page(request, "answers/ask.html", context, status)


@require_safe
def ask_page(request: HttpRequest) -> HttpResponse:
    """The ask page: a question form; its script streams the answer, and it works without it.

    `?q=` fills the question box (an example question chosen without JavaScript, a shared link).
    """
    question = request.GET.get("q", "")[:MAX_QUESTION_LENGTH]
    return _ask_page(request, AskForm(initial={"question": question}))


@require_safe
def favicon(request: HttpRequest) -> HttpResponse:
    """`/favicon.ico`, which browsers ask for on pages that link no icon (admin, the API's): the icon.

    A temporary redirect, cached for a day: the static URL carries a content hash once
    collected, and a permanent redirect would outlive the file it names.
    """
    response = HttpResponseRedirect(static("answers/favicon.ico"))
    patch_cache_control(response, public=True, max_age=FAVICON_MAX_AGE)
    return response


def _throttled(request: HttpRequest) -> int | None:
    """Seconds to wait before asking again (for Retry-After), or None when the question may go on.

    The same limits (and counters) as POST /api/answers/: the page is another way to ask.
    """
    for throttle in (AskAnonThrottle(), AskUserThrottle()):
        if not throttle.allow_request(request, None):  # type: ignore[arg-type]
            wait = throttle.wait()
            return max(1, math.ceil(wait)) if wait is not None else 1
    return None


@require_POST
async def ask_submit(request: HttpRequest) -> HttpResponse:
    """The form's no-JavaScript path: answer on the JSON path, then 303 to the conversation's permalink
    (at the new turn). A follow-up names its conversation in the form's hidden field."""
    user = await request.auser()
    request.user = user
    form = AskForm(request.POST)
    if not form.is_valid():
        return await sync_to_async(_form_page)(request, form, 400)
    retry_after = _throttled(request)
    if retry_after is not None:
        message = "Too many questions in a short time. Please wait a minute and try again."
        return await _refused(request, form, message, status=429, retry_after=retry_after)
    try:
        # A question the process will not take is refused before its asker's session is made.
        lifecycle.check_admission(limit=conf.MAX_GENERATING)
        session_key = await _asker_session(request, user)
        answer = await flow.ask(
            question=form.cleaned_data["question"],
            asker_id=user.pk if user.is_authenticated else None,
            publisher=JSON,
            conversation_id=form.cleaned_data["conversation"],
            asker=Asker.of(user, session_key),
        )
    except ConversationNotFound:
        raise Http404("No conversation has this id.") from None
    except ConversationRefused as exc:
        form.add_error(None, exc.message)
        status = 403 if isinstance(exc, NotConversationOwner) else 409
        return await sync_to_async(_form_page)(request, form, status)
    except AnswerDeleted:
        raise Http404("The answer was deleted while it was being written.") from None
    except lifecycle.NotAdmitted as exc:
        # Stopping, or answering as many questions as it may: nothing stored, the question kept in the form.
        return await _refused(request, form, exc.message, status=503, retry_after=exc.retry_after)
    # 303: the browser follows with a GET, so reloading the permalink never asks again.
    target = answer.get_absolute_url()
    if answer.conversation_id is not None:
        target = reverse("answers:conversation", kwargs={"conversation_id": answer.conversation_id})
        target += f"#turn-{answer.turn}"
    response = HttpResponseRedirect(target)
    response.status_code = 303
    return response


async def _asker_session(request: HttpRequest, user: Any) -> str | None:
    """An anonymous asker's session key (the session made if it has none): it owns the conversation
    it starts. None for a signed-in asker."""
    if user.is_authenticated:
        return None
    if request.session.session_key is None or not await request.session.aexists(request.session.session_key):
        await request.session.acreate()
    return request.session.session_key


async def _refused(
    request: HttpRequest, form: AskForm, message: str, *, status: int, retry_after: int
) -> HttpResponse:
    """The form again, with why the question was not taken and when to ask again (Retry-After)."""
    form.add_error(None, message)
    refused = await sync_to_async(_form_page)(request, form, status)
    refused["Retry-After"] = str(retry_after)
    return refused


def _form_page(request: HttpRequest, form: AskForm, status: int) -> HttpResponse:
    """The page a refused form post shows again: its conversation's (a follow-up), else the ask page."""
    conversation_id = form.cleaned_data.get("conversation") if hasattr(form, "cleaned_data") else None
    if conversation_id is not None:
        page = _conversation_page(request, conversation_id, form, status)
        if page is not None:
            return page
    return _ask_page(request, form, status)


def _conversation_page(
    request: HttpRequest, conversation_id: uuid.UUID, form: AskForm | None, status: int = 200
) -> HttpResponse | None:
    user = request.user
    conversation = conversation_get(conversation_id=conversation_id, user=user)
    if conversation is None:
        return None
    turns = conversation_turns(conversation)
    session_key = request.session.session_key if hasattr(request, "session") else None
    may_continue = Asker.of(user, session_key).owns(conversation)
    context = {
        "conversation": conversation,
        "turns": [_turn_context(request, user, answer) for answer in turns],
        "first_question": turns[0].question if turns else "",
        "may_continue": may_continue,
        "form": form or AskForm(initial={"conversation": conversation.id}),
    }
    return _page(request, "answers/conversation.html", context, status)


@require_safe
def conversation_permalink(request: HttpRequest, conversation_id: uuid.UUID) -> HttpResponse:
    """A conversation, server-rendered: every turn from its stored pair (a turn in flight joins its stream).

    The answers' read rules (answers.auth; 404 for whoever may not read it); the follow-up form
    only for whoever started it.
    """
    try:
        user = request_user(request)
    except AuthenticationFailed as exc:
        return _unauthorized(exc)
    request.user = user
    page = _conversation_page(request, conversation_id, None)
    if page is None:
        raise Http404("No conversation has this id.")
    return page


def _turn_context(request: HttpRequest, user: Any, answer: Answer) -> dict[str, Any]:
    """One turn of a conversation's page: its answer block, with this reader's feedback on it."""
    context = _answer_context(answer, user, turn=answer.turn)
    _with_reader_feedback(request, user, answer, context)
    return context


def _unauthorized(exc: AuthenticationFailed) -> HttpResponse:
    response = HttpResponse(f"{exc.detail}\n", status=401, content_type="text/plain; charset=utf-8")
    response["WWW-Authenticate"] = challenge()
    return response


def _readable_answer(request: HttpRequest, answer_id: uuid.UUID) -> tuple[Any, Answer] | HttpResponse:
    """Who asks and the answer, by the permalink's read rules (answers.auth): a bad token's 401
    response; Http404, as for a missing one, for whoever may not read it."""
    try:
        user = request_user(request)
    except AuthenticationFailed as exc:
        return _unauthorized(exc)
    answer = selectors.answer_get(answer_id=answer_id, user=user)
    if answer is None:
        raise Http404("No answer has this id.")
    return user, answer


@require_safe
def answer_permalink(request: HttpRequest, answer_id: uuid.UUID) -> HttpResponse:
    """One answer, server-rendered: the persisted final pair (or its error).

    The API's read rules and its way of telling who asks (answers.auth): a browser's session, or a
    token (a bad one is a 401); anyone who may not read the answer gets the 404 of a missing one.
    """
    found = _readable_answer(request, answer_id)
    if isinstance(found, HttpResponse):
        return found
    user, answer = found
    context = {"form": AskForm(), **_answer_context(answer, user)}
    # A declined answer offers the example questions again: questions the site does answer.
    context["examples"] = examples.first_screen_get().examples if context["declined"] else []
    _with_reader_feedback(request, user, answer, context)
    return _page(request, "answers/answer_detail.html", context)


def _with_reader_feedback(request: HttpRequest, user: Any, answer: Answer, context: dict[str, Any]) -> None:
    """What this reader sent on a done answer, in its page context: the page shows it, and offers to
    change it (answers/feedback.py); on an answer's permalink and on each turn of a conversation's."""
    if answer.status != Answer.Status.DONE:
        return
    reader = anonymous_client(FeedbackAnonThrottle().get_ident(request))  # type: ignore[arg-type]
    current = selectors.feedback_current(answer=answer, user=user, client=reader)
    flags = {flag["source"]: flag for flag in current["flags"]}
    context["feedback"] = current
    for ref in context["references"]:
        ref["flag"] = flags.get(ref["number"])


def _markdown_title(title: str) -> str:
    """A document's or reader's words as Markdown text, one line: nothing in them is markup.

    Brackets and backslashes are escaped (link text stays one link), and so are `<`, `>`
    and `&`: a title holding `<img src=x onerror=...>` reads as that text, not as raw
    HTML, in whatever renders the copy (CommonMark backslash escapes, any renderer).
    """
    return " ".join(re.sub(r"([\\\[\]<>&])", r"\\\1", title).split())


def _markdown_href(request: HttpRequest, url: str) -> str:
    """A source's URL as a Markdown link target, absolute (copies leave the site); "" when no link.

    No URL can end the target early: its `<` and `>` are percent-encoded (as a browser sends
    them), so a target with spaces or parentheses goes in `<...>`, which only a `>` closes
    (link_url leaves no line break or backslash in it), and any other has no `(` or `)` at all.
    Ingest refuses such URLs (answers.content.validation); this keeps those stored before it.
    """
    link = link_url(url)
    if link is None:
        return ""
    absolute = request.build_absolute_uri(link) if link.startswith("/") else link
    absolute = absolute.replace("<", "%3C").replace(">", "%3E")
    return f"<{absolute}>" if re.search(r"[\s()]", absolute) else absolute


@require_safe
def answer_markdown(request: HttpRequest, answer_id: uuid.UUID) -> HttpResponse:
    """`/answers/<id>/answer.md`: a done answer as Markdown with its numbered Sources list, as a download.

    A follow-up's file starts with the questions asked before it in its conversation: the answer to
    "and how is that different?" reads as an answer to something. The permalink's read rules (a 404
    for whoever may not read it); an answer not done is a 409.
    """
    found = _readable_answer(request, answer_id)
    if isinstance(found, HttpResponse):
        return found
    user, answer = found
    if answer.status != Answer.Status.DONE:
        return HttpResponse(
            "This answer is not finished; its Markdown is there once it is.\n",
            status=409,
            content_type="text/plain; charset=utf-8",
        )
    # Sources this reader may no longer read: their number only, as on the page
    # (docs/reference/http.md, answer.md).
    redaction = selectors.answer_redaction(answer=answer, user=user)
    references = [
        ref
        if ref.get("withheld")
        else {
            "number": ref["number"],
            "title": _markdown_title(ref["title"] or ref["url"] or "Untitled"),
            "href": _markdown_href(request, ref["url"]),
        }
        for ref in payloads.answer_references(answer, redaction)
    ]
    context = {
        "question": _markdown_title(answer.question),
        "earlier": [_markdown_title(question) for question in earlier_questions(answer)],
        "text": markdown_without_html(answer.final_text),
        "references": references,
        "permalink": request.build_absolute_uri(answer.get_absolute_url()),
    }
    response = TemplateResponse(
        request, "answers/answer.md", context, content_type="text/markdown; charset=utf-8"
    ).render()
    response["Content-Disposition"] = f'attachment; filename="answer-{answer.id}.md"'
    return response


@require_safe
def unknown_answer_page(request: HttpRequest, raw_id: str) -> HttpResponse:
    """`/answers/<anything but an id in its one form>/`: the permalink's refusals, in its order."""
    try:
        request_user(request)
    except AuthenticationFailed as exc:
        return _unauthorized(exc)
    raise Http404("No answer has this id.")


def unknown_answer_events(request: HttpRequest, raw_id: str) -> HttpResponseBase:
    """`/answers/<anything but an id in its one form>/events/`: the stream's own JSON 405, 401 or 404."""
    refused = method_refusal(request) or stream_refusal(request, None)
    assert refused is not None
    return refused
