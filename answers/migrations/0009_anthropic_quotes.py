from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('answers', '0008_chunk_embedding'),
    ]

    operations = [
        migrations.AddField(
            model_name='answersource',
            name='quotes',
            field=models.JSONField(blank=True, default=list, editable=False, help_text='Passages a provider with native citations said it cited from this source, in order.'),
        ),
    ]
