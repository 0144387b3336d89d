# One verdict per reader per answer, one flag per reader per source: a later one replaces
# the earlier. Rows already stored keep only each reader's latest (the one the reader last meant).

from django.conf import settings
from django.db import migrations, models


def keep_latest(apps, schema_editor):
    Feedback = apps.get_model("answers", "Feedback")
    alias = schema_editor.connection.alias
    seen = set()
    stale = []
    for row in Feedback.objects.using(alias).order_by("-created_at", "-id").values(
        "id", "answer_id", "user_id", "client", "source_id"
    ):
        reader = ("user", row["user_id"]) if row["user_id"] is not None else ("client", row["client"])
        if reader == ("client", ""):
            continue  # a deleted user's row: nobody to count it against
        key = (row["answer_id"], reader, row["source_id"])
        if key in seen:
            stale.append(row["id"])
        else:
            seen.add(key)
    Feedback.objects.using(alias).filter(pk__in=stale).delete()


class Migration(migrations.Migration):

    dependencies = [
        ('answers', '0014_answer_owner'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RunPython(keep_latest, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name='feedback',
            constraint=models.UniqueConstraint(condition=models.Q(('source__isnull', True), ('user__isnull', False)), fields=('answer', 'user'), name='feedback_one_verdict_per_user'),
        ),
        migrations.AddConstraint(
            model_name='feedback',
            constraint=models.UniqueConstraint(condition=models.Q(('source__isnull', True), ('user__isnull', True), models.Q(('client', ''), _negated=True)), fields=('answer', 'client'), name='feedback_one_verdict_per_client'),
        ),
        migrations.AddConstraint(
            model_name='feedback',
            constraint=models.UniqueConstraint(condition=models.Q(('source__isnull', False), ('user__isnull', False)), fields=('answer', 'user', 'source'), name='feedback_one_flag_per_user'),
        ),
        migrations.AddConstraint(
            model_name='feedback',
            constraint=models.UniqueConstraint(condition=models.Q(('source__isnull', False), ('user__isnull', True), models.Q(('client', ''), _negated=True)), fields=('answer', 'client', 'source'), name='feedback_one_flag_per_client'),
        ),
    ]
