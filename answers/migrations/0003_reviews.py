# QA reviewers' verdicts on answers, with optional per-source flags.

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('answers', '0002_search_index'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='Review',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('verdict', models.CharField(choices=[('ok', 'OK'), ('wrong_citation', 'Wrong citation'), ('missing_citation', 'Missing citation'), ('unsupported_claim', 'Unsupported claim'), ('other', 'Other')], max_length=32)),
                ('notes', models.TextField(blank=True)),
                ('created_at', models.DateTimeField(auto_now_add=True, db_index=True)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('answer', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='reviews', to='answers.answer')),
                ('reviewer', models.ForeignKey(blank=True, editable=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='answer_reviews', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'ordering': ('-created_at', '-id'),
            },
        ),
        migrations.CreateModel(
            name='ReviewSourceFlag',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('flag', models.CharField(choices=[('does_not_support', 'Cited but does not support the claim'), ('should_be_cited', 'Should have been cited'), ('irrelevant', 'Irrelevant retrieval'), ('other', 'Other')], max_length=32)),
                ('note', models.CharField(blank=True, max_length=1000)),
                ('review', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='source_flags', to='answers.review')),
                ('source', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='review_flags', to='answers.answersource')),
            ],
            options={
                'ordering': ('review_id', 'source_id', 'id'),
            },
        ),
        migrations.AddIndex(
            model_name='review',
            index=models.Index(fields=['answer', '-created_at'], name='review_answer_created'),
        ),
        migrations.AddConstraint(
            model_name='review',
            constraint=models.CheckConstraint(condition=models.Q(('verdict__in', ['ok', 'wrong_citation', 'missing_citation', 'unsupported_claim', 'other'])), name='review_verdict_valid'),
        ),
        migrations.AddConstraint(
            model_name='reviewsourceflag',
            constraint=models.UniqueConstraint(fields=('review', 'source', 'flag'), name='reviewsourceflag_unique'),
        ),
        migrations.AddConstraint(
            model_name='reviewsourceflag',
            constraint=models.CheckConstraint(condition=models.Q(('flag__in', ['does_not_support', 'should_be_cited', 'irrelevant', 'other'])), name='reviewsourceflag_flag_valid'),
        ),
    ]
