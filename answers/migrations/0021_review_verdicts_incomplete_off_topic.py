# Reviews are append-only: two more verdicts, and the `QA reviewers` group loses the
# permissions to change a review and to change or remove its source flags (admin refuses both to
# everyone anyway; the group's list says what reviewers can do: view, and add a review).

from django.db import migrations, models

GROUP_NAME = "QA reviewers"
NO_LONGER = [
    ("answers", "change_review"),
    ("answers", "change_reviewsourceflag"),
    ("answers", "delete_reviewsourceflag"),
]


def _permissions(apps, alias):
    Permission = apps.get_model("auth", "Permission")
    return [
        Permission.objects.using(alias).get(content_type__app_label=app, codename=codename)
        for app, codename in NO_LONGER
    ]


def revoke(apps, schema_editor):
    alias = schema_editor.connection.alias
    Group = apps.get_model("auth", "Group")
    for group in Group.objects.using(alias).filter(name=GROUP_NAME):
        group.permissions.remove(*_permissions(apps, alias))


def grant_again(apps, schema_editor):
    alias = schema_editor.connection.alias
    Group = apps.get_model("auth", "Group")
    for group in Group.objects.using(alias).filter(name=GROUP_NAME):
        group.permissions.add(*_permissions(apps, alias))


class Migration(migrations.Migration):
    dependencies = [
        ("answers", "0020_answer_origin_usage_native"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name="review",
            name="review_verdict_valid",
        ),
        migrations.AlterField(
            model_name="review",
            name="verdict",
            field=models.CharField(
                choices=[
                    ("ok", "OK"),
                    ("wrong_citation", "Wrong citation"),
                    ("missing_citation", "Missing citation"),
                    ("unsupported_claim", "Unsupported claim"),
                    ("incomplete", "Does not fully answer the question"),
                    ("off_topic", "Answers another question"),
                    ("other", "Other"),
                ],
                max_length=32,
            ),
        ),
        migrations.AddConstraint(
            model_name="review",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    (
                        "verdict__in",
                        [
                            "ok",
                            "wrong_citation",
                            "missing_citation",
                            "unsupported_claim",
                            "incomplete",
                            "off_topic",
                            "other",
                        ],
                    )
                ),
                name="review_verdict_valid",
            ),
        ),
        migrations.RunPython(revoke, grant_again),
    ]
