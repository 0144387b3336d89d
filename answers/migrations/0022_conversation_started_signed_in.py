# A deleted user's conversation stays private: Conversation.started_signed_in, as an answer's
# asked_signed_in. Conversations stored before it are marked from what they still say: an asker, or a
# turn asked signed in (a user deleted before this migration left the conversation no asker, but its
# answers kept asked_signed_in).

from django.conf import settings
from django.db import migrations, models
from django.db.models import Q


def mark_signed_in(apps, schema_editor):
    Conversation = apps.get_model("answers", "Conversation")
    Answer = apps.get_model("answers", "Answer")
    signed_in_turns = Answer.objects.filter(asked_signed_in=True, conversation__isnull=False).values(
        "conversation_id"
    )
    Conversation.objects.filter(Q(asker__isnull=False) | Q(pk__in=signed_in_turns)).update(
        started_signed_in=True
    )


class Migration(migrations.Migration):

    dependencies = [
        ('answers', '0021_review_verdicts_incomplete_off_topic'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name='conversation',
            name='started_signed_in',
            field=models.BooleanField(default=False, editable=False, help_text='Started by a signed-in user: readable by that user and staff only, even once the user is deleted.'),
        ),
        migrations.RunPython(mark_signed_in, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name='conversation',
            constraint=models.CheckConstraint(condition=models.Q(('asker__isnull', True), ('started_signed_in', True), _connector='OR'), name='conversation_asker_is_signed_in'),
        ),
    ]
