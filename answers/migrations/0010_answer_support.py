from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("answers", "0009_anthropic_quotes"),
    ]

    operations = [
        migrations.AddField(
            model_name="answer",
            name="support",
            field=models.JSONField(
                blank=True,
                editable=False,
                help_text="Which sentences the sources back (the trail's `support`); null until computed.",
                null=True,
            ),
        ),
        migrations.AddField(
            model_name="answer",
            name="unsupported_count",
            field=models.PositiveIntegerField(
                blank=True,
                editable=False,
                help_text="Sentences citing a source that scores under the support bar; null until computed.",
                null=True,
            ),
        ),
        migrations.AddField(
            model_name="answer",
            name="grounded_uncited_count",
            field=models.PositiveIntegerField(
                blank=True,
                editable=False,
                help_text="Sentences without a marker that a retrieved source grounds; null until computed.",
                null=True,
            ),
        ),
    ]
