import datetime

from django.db import migrations, models

import config.bounds


class Migration(migrations.Migration):

    dependencies = [
        ('review', '0004_review_basics'),
    ]

    operations = [
        migrations.AddField(
            model_name='studysessionitem',
            name='due_at',
            field=models.DateTimeField(blank=True, null=True, validators=[config.bounds.validate_datetime]),
        ),
        migrations.AddConstraint(
            model_name='studysessionitem',
            constraint=models.CheckConstraint(condition=models.Q(models.Q(('due_at__gte', datetime.datetime(1, 1, 2, 0, 0, tzinfo=datetime.timezone.utc)), ('due_at__lte', datetime.datetime(9999, 12, 30, 0, 0, tzinfo=datetime.timezone.utc))), config.bounds.DateTextReadable(models.F('due_at'))), name='studysessionitem_due_at_range'),
        ),
    ]
