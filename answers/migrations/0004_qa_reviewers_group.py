# The `QA reviewers` group: read every answer and its trail, write their own reviews.
#
# Exactly these permissions; "their own" is enforced by ReviewAdmin. Flags are
# parts of a review, so a reviewer may add, change and remove them (on their
# own reviews only); reviews themselves are kept (no delete_review).

from django.contrib.auth.management import create_permissions
from django.db import migrations

GROUP_NAME = "QA reviewers"
PERMISSIONS = [
    ("answers", "view_answer"),
    ("answers", "view_answersource"),
    ("answers", "view_trail"),
    ("answers", "view_review"),
    ("answers", "add_review"),
    ("answers", "change_review"),
    ("answers", "view_reviewsourceflag"),
    ("answers", "add_reviewsourceflag"),
    ("answers", "change_reviewsourceflag"),
    ("answers", "delete_reviewsourceflag"),
]


def create_group(apps, schema_editor):
    # In a fresh database the permissions are only created after all migrations
    # (post_migrate); create them now so the group can hold them.
    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0, using=schema_editor.connection.alias)
        app_config.models_module = None

    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    group, _ = Group.objects.using(schema_editor.connection.alias).get_or_create(name=GROUP_NAME)
    permissions = []
    for app_label, codename in PERMISSIONS:
        permissions.append(
            Permission.objects.using(schema_editor.connection.alias).get(
                content_type__app_label=app_label, codename=codename
            )
        )
    group.permissions.set(permissions)


def delete_group(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    Group.objects.using(schema_editor.connection.alias).filter(name=GROUP_NAME).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("answers", "0003_reviews"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(create_group, delete_group)]
