# Who resolved feedback: Feedback.resolver. Feedback a review resolved before it gets that
# review's reviewer; feedback marked resolved by hand before it recorded no one, and stays so.

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models
from django.db.models import OuterRef, Subquery


def resolver_from_reviews(apps, schema_editor):
    Feedback = apps.get_model("answers", "Feedback")
    Review = apps.get_model("answers", "Review")
    reviewer = Review.objects.filter(pk=OuterRef("resolved_by_id")).values("reviewer_id")[:1]
    Feedback.objects.filter(resolved_by__isnull=False).update(resolver_id=Subquery(reviewer))


class Migration(migrations.Migration):

    dependencies = [
        ('answers', '0022_conversation_started_signed_in'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name='feedback',
            name='resolver',
            field=models.ForeignKey(blank=True, editable=False, help_text='Who resolved it: the reviewer who marked it resolved, or whose review resolved it.', null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='feedback_resolved', to=settings.AUTH_USER_MODEL),
        ),
        migrations.RunPython(resolver_from_reviews, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name='feedback',
            constraint=models.CheckConstraint(condition=models.Q(('resolver__isnull', True), ('resolved_at__isnull', False), _connector='OR'), name='feedback_resolver_has_time'),
        ),
    ]
