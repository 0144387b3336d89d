# Issue 35, bounded output: a done answer's HTML is rendered once, when it is stored, and read from
# here by the `done` event, the page and admin (answers stored before keep '' and are rendered on read).

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("answers", "0012_declined_coverage"),
    ]

    operations = [
        migrations.AddField(
            model_name="answer",
            name="html",
            field=models.TextField(
                blank=True,
                default="",
                editable=False,
                help_text="The final text rendered and sanitized (answers.rendering), stored once `done`: what the `done` event, the page and admin show, never rendered again on a read.",
            ),
        ),
    ]
