# An answer's owner outlives its user: the asker key stays SET_NULL (the answer and its
# trail are kept for QA), and `asked_signed_in` records that it was asked signed in, so a deleted
# user's answers stay private (staff only) instead of reading as anonymous ones.

from django.conf import settings
from django.db import migrations, models


def mark_signed_in(apps, schema_editor):
    # Answers asked signed in before this field existed: those whose asker still exists. (Those whose
    # user was already deleted cannot be told from anonymous ones any more.)
    Answer = apps.get_model("answers", "Answer")
    Answer.objects.using(schema_editor.connection.alias).filter(asker__isnull=False).update(
        asked_signed_in=True
    )


class Migration(migrations.Migration):
    dependencies = [
        ("answers", "0013_output_bounds"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="answer",
            name="asked_signed_in",
            field=models.BooleanField(
                default=False,
                editable=False,
                help_text=(
                    "Asked by a signed-in user: readable by that user and staff only, even once the user "
                    "is deleted."
                ),
            ),
        ),
        migrations.RunPython(mark_signed_in, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="answer",
            constraint=models.CheckConstraint(
                condition=models.Q(("asker__isnull", True), ("asked_signed_in", True), _connector="OR"),
                name="answer_asker_is_signed_in",
            ),
        ),
    ]
