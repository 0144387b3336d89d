"""Documents API for integrators who push content: create or update by key, read, delete.

Same validation as `manage.py ingest` (answers.content.clean_document). Access
follows Django model permissions: `answers.add_document` to create,
`answers.change_document` to update an existing key, `answers.view_document`
to read, `answers.delete_document` to delete (session or token auth).
"""

from __future__ import annotations

from typing import Any

from django.db.models import Count, QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.permissions import DjangoModelPermissions
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from answers import content
from answers.models import Document


class DocumentPermissions(DjangoModelPermissions):
    """Model permissions, reading included (DRF's default lets any signed-in user read)."""

    perms_map = {
        **DjangoModelPermissions.perms_map,
        "GET": ["%(app_label)s.view_%(model_name)s"],
        "HEAD": ["%(app_label)s.view_%(model_name)s"],
    }


class DocumentInputSerializer(serializers.Serializer[Any]):
    key = serializers.CharField(trim_whitespace=False, allow_blank=True, help_text="URL or feed id.")
    title = serializers.CharField(trim_whitespace=False, allow_blank=True)
    url = serializers.CharField(required=False, default="", allow_blank=True, trim_whitespace=False)
    body = serializers.CharField(trim_whitespace=False, allow_blank=True)
    doc_type = serializers.CharField(required=False, default="", allow_blank=True)
    metadata = serializers.JSONField(required=False, default=dict)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        try:
            attrs["clean"] = content.clean_document(**attrs)
        except content.InvalidDocument as exc:
            raise ValidationError({exc.field: [exc.message]}) from None
        return attrs


class DocumentOutputSerializer(serializers.ModelSerializer[Document]):
    chunk_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = Document
        fields = [
            "id", "key", "title", "url", "body", "doc_type", "metadata", "content_hash",
            "chunk_count", "created_at", "updated_at",
        ]  # fmt: skip
        read_only_fields = fields


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
    queryset = Document.objects.all()

    @extend_schema(request=DocumentInputSerializer, responses={200: DocumentUpsertOutputSerializer})
    def post(self, request: Request) -> Response:
        serializer = DocumentInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        clean: content.CleanDocument = serializer.validated_data["clean"]
        if Document.objects.filter(key=clean.key).exists() and not request.user.has_perm(
            "answers.change_document"
        ):
            raise PermissionDenied("A document with this key exists; updating it needs change permission.")
        document, created, changed = content.document_store(clean=clean)
        output = _documents().get(pk=document.pk)
        data = {
            **DocumentOutputSerializer(output).data,
            "created": created,
            "changed": changed,
            "warnings": clean.warnings,
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

    @extend_schema(responses={200: DocumentOutputSerializer})
    def get(self, request: Request, document_id: int) -> Response:
        return Response(DocumentOutputSerializer(self._get(document_id)).data)

    @extend_schema(responses={204: None})
    def delete(self, request: Request, document_id: int) -> Response:
        content.document_delete(document=self._get(document_id))
        return Response(status=status.HTTP_204_NO_CONTENT)
