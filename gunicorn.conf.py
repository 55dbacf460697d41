"""gunicorn's own settings, read from the directory it starts in (the repository root, where
the README's production command runs; elsewhere pass `-c /path/to/gunicorn.conf.py`).

Under LOG_FORMAT=json the master's own lines (Starting gunicorn, Listening at, Booting
worker, Handling signal), written before any app loads, are JSON too: the same handler and
formatter as the app's (config.logs.gunicorn_logging). Under plain, gunicorn's own format.
"""

import os

from config.logs import gunicorn_logging

logconfig_dict = gunicorn_logging(
    os.environ.get("LOG_FORMAT", "plain"), os.environ.get("LOG_LEVEL", "INFO")
)
