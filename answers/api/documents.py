"""Documents API for integrators who push content: create or update by key, read, delete.

Same validation as `manage.py ingest` (answers.content.validation.clean_document). Access
follows Django model permissions: `answers.add_document` to create,
`answers.change_document` to update an existing key, `answers.view_document`
to read, `answers.delete_document` to delete (session or token auth). With
ANSWERS_EMBEDDINGS on, a stored document's new chunks are embedded before the
reply; when the embeddings server fails, the document is kept and `warnings`
says so under `embeddings`. Deleting a document deletes its chunks' vectors.
"""

from __future__ import annotations

from typing import Any

from django.core.validators import ProhibitNullCharactersValidator
from django.db.models import Count, QuerySet
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.permissions import DjangoModelPermissions
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from answers.api.fields import StrictCharField
from answers.api.parsers import JSONParser
from answers.api.schema import SOME_TEXT, errors
from answers.conf import conf
from answers.content.storage import document_access, document_delete, document_store
from answers.content.validation import (
    KEY_MAX,
    TITLE_MAX,
    TYPE_MAX,
    URL_MAX,
    CleanDocument,
    InvalidDocument,
    clean_document,
)
from answers.models import Document
from answers.retrieval.embeddings import embed_missing


class DocumentPermissions(DjangoModelPermissions):
    """Model permissions, reading included (DRF's default lets any signed-in user read)."""

    perms_map = {
        **DjangoModelPermissions.perms_map,
        "GET": ["%(app_label)s.view_%(model_name)s"],
        "HEAD": ["%(app_label)s.view_%(model_name)s"],
    }


def _text_schema(max_length: int | None = None, *, required_text: bool = True) -> dict[str, Any]:
    """What clean_document accepts: NULs are dropped, whitespace is trimmed, then the limits apply."""
    schema: dict[str, Any] = {"type": "string"}
    if required_text:
        schema["pattern"] = SOME_TEXT
    if max_length is not None:
        schema["maxLength"] = max_length
    return schema


class _DocumentText(StrictCharField):
    """A document's text field: NUL characters pass here, and clean_document drops them (PostgreSQL
    cannot store them), as `ingest` does with files; DRF's CharField would refuse them, against the
    schema (_text_schema)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.validators = [v for v in self.validators if not isinstance(v, ProhibitNullCharactersValidator)]


@extend_schema_field(_text_schema(KEY_MAX))
class _KeyField(_DocumentText):
    pass


@extend_schema_field(_text_schema(TITLE_MAX))
class _TitleField(_DocumentText):
    pass


@extend_schema_field(_text_schema(URL_MAX, required_text=False))
class _UrlField(_DocumentText):
    pass


# No maxLength in the schema: a fuzzer would send 5 MB bodies to test it (the limit is BODY_MAX).
@extend_schema_field(_text_schema())
class _BodyField(_DocumentText):
    pass


@extend_schema_field(_text_schema(TYPE_MAX, required_text=False))
class _TypeField(_DocumentText):
    pass


ACCESS_SCHEMA: dict[str, Any] = {
    "oneOf": [
        {"type": "string", "enum": ["public", "signed-in", "staff"]},
        {"type": "array", "items": {"type": "string", "pattern": SOME_TEXT, "maxLength": 150}, "minItems": 1},
    ]
}


@extend_schema_field(ACCESS_SCHEMA)
class _AccessField(serializers.JSONField):
    pass


class DocumentInputSerializer(serializers.Serializer[Any]):
    key = _KeyField(trim_whitespace=False, allow_blank=False, help_text="URL or feed id.")
    title = _TitleField(trim_whitespace=False, allow_blank=False)
    url = _UrlField(required=False, default="", allow_blank=True, trim_whitespace=False)
    body = _BodyField(trim_whitespace=False, allow_blank=False)
    doc_type = _TypeField(required=False, default="", allow_blank=True)
    metadata = serializers.JSONField(required=False, default=dict)
    access = _AccessField(
        required=False,
        default="public",  # type: ignore[arg-type]  # any JSON value may be a default
        help_text='Who may read it: "public" (the default), "signed-in", "staff", or a list of group '
        "names (members of any; staff always). An update replaces it too.",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        try:
            attrs["clean"] = clean_document(**attrs)
        except InvalidDocument as exc:
            raise ValidationError({exc.field: [exc.message]}) from None
        return attrs


class DocumentOutputSerializer(serializers.ModelSerializer[Document]):
    chunk_count = serializers.IntegerField(read_only=True)
    access = serializers.SerializerMethodField()

    class Meta:
        model = Document
        fields = [
            "id", "key", "title", "url", "body", "doc_type", "metadata", "access", "source",
            "content_hash", "chunk_count", "created_at", "updated_at",
        ]  # fmt: skip
        read_only_fields = fields

    @extend_schema_field(ACCESS_SCHEMA)
    def get_access(self, document: Document) -> str | list[str]:
        return document_access(document).value


class DocumentUpsertOutputSerializer(DocumentOutputSerializer):
    created = serializers.BooleanField(read_only=True)
    changed = serializers.BooleanField(read_only=True)
    warnings = serializers.DictField(child=serializers.CharField(), read_only=True)

    class Meta(DocumentOutputSerializer.Meta):
        fields = [*DocumentOutputSerializer.Meta.fields, "created", "changed", "warnings"]
        read_only_fields = fields


def _documents() -> QuerySet[Document]:
    return Document.objects.annotate(chunk_count=Count("chunks"))


class DocumentUpsertView(APIView):
    """POST /api/documents/: create (201) or update (200) the document with this key."""

    permission_classes = [DocumentPermissions]
    parser_classes = [JSONParser]
    queryset = Document.objects.all()

    @extend_schema(
        request=DocumentInputSerializer,
        responses={
            200: DocumentUpsertOutputSerializer,
            201: DocumentUpsertOutputSerializer,
            **errors(400, 401, 403, 415),
        },
    )
    def post(self, request: Request) -> Response:
        serializer = DocumentInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        clean: CleanDocument = serializer.validated_data["clean"]
        if Document.objects.filter(key=clean.key).exists() and not request.user.has_perm(
            "answers.change_document"
        ):
            raise PermissionDenied("A document with this key exists; updating it needs change permission.")
        document, created, changed = document_store(clean=clean)
        # Vectors for its new or changed chunks (ANSWERS_EMBEDDINGS on). A server that fails
        # costs the request at most ANSWERS_EMBEDDINGS_TIMEOUT a batch and never the document.
        embedded = embed_missing([document.pk], deadline=conf.EMBEDDINGS_TIMEOUT)
        warnings = dict(clean.warnings)
        if embedded.warning is not None:
            warnings["embeddings"] = embedded.warning
        output = _documents().get(pk=document.pk)
        data = {
            **DocumentOutputSerializer(output).data,
            "created": created,
            "changed": changed,
            "warnings": warnings,
        }
        return Response(data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class DocumentDetailView(APIView):
    """GET / DELETE /api/documents/<id>/."""

    permission_classes = [DocumentPermissions]
    queryset = Document.objects.all()

    def _get(self, document_id: int) -> Document:
        document = _documents().filter(pk=document_id).first()
        if document is None:
            raise NotFound("No document has this id.")
        return document

    @extend_schema(responses={200: DocumentOutputSerializer, **errors(401, 403, 404)})
    def get(self, request: Request, document_id: int) -> Response:
        return Response(DocumentOutputSerializer(self._get(document_id)).data)

    @extend_schema(responses={204: None, **errors(401, 403, 404)})
    def delete(self, request: Request, document_id: int) -> Response:
        document_delete(document=self._get(document_id))
        return Response(status=status.HTTP_204_NO_CONTENT)
