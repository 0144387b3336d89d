# Reader feedback on answers, and what the `QA reviewers` group needs to work through it:
# view feedback, and change it (to mark it resolved). Readers add feedback through the API only;
# nobody adds or deletes it in admin.

import django.db.models.deletion
from django.conf import settings
from django.contrib.auth.management import create_permissions
from django.db import migrations, models

GROUP_NAME = "QA reviewers"
PERMISSIONS = [("answers", "view_feedback"), ("answers", "change_feedback")]


def grant(apps, schema_editor):
    # The new model's permissions are only created after all migrations (post_migrate): create them now.
    alias = schema_editor.connection.alias
    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0, using=alias)
        app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    group, _ = Group.objects.using(alias).get_or_create(name=GROUP_NAME)
    group.permissions.add(
        *(
            Permission.objects.using(alias).get(content_type__app_label=app, codename=codename)
            for app, codename in PERMISSIONS
        )
    )


def revoke(apps, schema_editor):
    alias = schema_editor.connection.alias
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    group = Group.objects.using(alias).filter(name=GROUP_NAME).first()
    if group is not None:
        group.permissions.remove(
            *Permission.objects.using(alias).filter(
                content_type__app_label="answers", codename__in=[c for _, c in PERMISSIONS]
            )
        )


class Migration(migrations.Migration):

    dependencies = [
        ('answers', '0010_answer_support'),
        ('auth', '0012_alter_user_first_name_max_length'),
        ('contenttypes', '0002_remove_content_type_name'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='Feedback',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('verdict', models.CharField(choices=[('helpful', 'Helpful'), ('unhelpful', 'Unhelpful')], editable=False, max_length=16)),
                ('comment', models.CharField(blank=True, editable=False, max_length=1000)),
                ('client', models.CharField(blank=True, editable=False, help_text="An anonymous reader: a keyed hash of the client's address (never the address).", max_length=64)),
                ('created_at', models.DateTimeField(auto_now_add=True, db_index=True)),
                ('resolved_at', models.DateTimeField(blank=True, editable=False, null=True)),
                ('answer', models.ForeignKey(editable=False, on_delete=django.db.models.deletion.CASCADE, related_name='feedback', to='answers.answer')),
                ('resolved_by', models.ForeignKey(blank=True, editable=False, help_text='The review that resolved it (empty when a reviewer marked it resolved by hand).', null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='resolved_feedback', to='answers.review')),
                ('source', models.ForeignKey(blank=True, editable=False, help_text='The source of the final list the reader says does not back the answer.', null=True, on_delete=django.db.models.deletion.CASCADE, related_name='feedback', to='answers.answersource')),
                ('user', models.ForeignKey(blank=True, editable=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='answer_feedback', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'verbose_name_plural': 'feedback',
                'ordering': ('-created_at', '-id'),
                'indexes': [models.Index(fields=['answer', 'resolved_at'], name='feedback_answer_resolved')],
                'constraints': [models.CheckConstraint(condition=models.Q(('verdict__in', ['helpful', 'unhelpful'])), name='feedback_verdict_valid'), models.CheckConstraint(condition=models.Q(('source__isnull', True), ('verdict', 'unhelpful'), _connector='OR'), name='feedback_flag_is_unhelpful'), models.CheckConstraint(condition=models.Q(('resolved_by__isnull', True), ('resolved_at__isnull', False), _connector='OR'), name='feedback_resolved_by_has_time')],
            },
        ),
        migrations.RunPython(grant, revoke),
    ]
