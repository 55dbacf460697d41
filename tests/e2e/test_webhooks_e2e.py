"""Webhooks through a real `manage.py qcluster` to a real local HTTP receiver.

Signatures verify with the standardwebhooks library; a 500 is retried by the worker; one
memory's events arrive in order; kill -9 of the cluster while a delivery is in flight, then
a restart, delivers it again with the same webhook-id (the receiver dedupes on it).
"""

from __future__ import annotations

import time

import pytest
from standardwebhooks.webhooks import Webhook

from tests.e2e.test_cluster import Cluster, _env, _wait_for, make_database  # noqa: F401
from tests.support.receiver import Receiver, serve
from tests.support.servers import manage

pytestmark = pytest.mark.slow

SEED = """
from django.contrib.auth import get_user_model
from memories import services
from memories.services import webhooks
owner = get_user_model().objects.create_user("hooks")
ns = services.namespace_create(owner=owner, name="Hooks")
sub = webhooks.webhook_subscription_create(namespace=ns, url="{url}")
print(sub.secret)
"""
WRITE = """
from memories import services
from memories.models import Namespace
ns = Namespace.objects.get(slug="hooks")
memory = services.memory_create(namespace=ns, content="{content}")
{more}
"""
LIFE = """services.memory_update(memory=memory, changes={"topic": "life"})
services.memory_forget(memory=memory, reason="done")"""


def test_signed_retried_in_order_and_redelivered_after_kill_9(make_database, tmp_path):  # noqa: F811
    receiver = Receiver(codes=[500])
    server = serve(receiver)
    database = make_database("webhooks")
    env = _env(
        database,
        Q_TIMEOUT=60,
        Q_RETRY=61,
        WEBHOOK_ALLOW_LOOPBACK="true",
        WEBHOOK_BACKOFF_SECONDS=1,
        WEBHOOK_LEASE_SECONDS=5,
        WEBHOOK_TIMEOUT_SECONDS=30,
    )
    manage(env, "migrate", "--no-input")
    manage(env, "createcachetable")
    manage(env, "setup_schedules")
    secret = manage(env, "shell", "--no-imports", "-c", SEED.format(url=receiver.url))
    manage(env, "shell", "--no-imports", "-c", WRITE.format(content="A life.", more=LIFE))
    cluster = Cluster(env, tmp_path / "cluster.log")
    try:
        # The 500 is retried by the retry schedule (the guard runs it about every 30 s).
        _wait_for(lambda: len(receiver.unique()) == 3, cluster, timeout=180)
        first, second = receiver.requests[:2]
        assert first.webhook_id == second.webhook_id  # the retry of the 500
        signer = Webhook(secret)
        for request in receiver.requests:
            signer.verify(request.body, request.headers)
        types = [r.payload["type"] for r in receiver.unique().values()]
        assert types == ["memory.created", "memory.updated", "memory.forgotten"]
        assert (
            database.scalar("SELECT attempts FROM memories_webhookdelivery ORDER BY id LIMIT 1")
            == 2
        )

        # kill -9 while the receiver holds the next delivery's request.
        receiver.hold = 20.0
        held = len(receiver.requests)
        manage(env, "shell", "--no-imports", "-c", WRITE.format(content="Killed.", more=""))
        _wait_for(lambda: len(receiver.requests) > held, cluster, timeout=60)
        cluster.kill()
    finally:
        cluster.stop()
    assert (
        database.scalar("SELECT status FROM memories_webhookdelivery ORDER BY id DESC LIMIT 1")
        == "pending"
    )
    time.sleep(6)  # past the killed worker's lease
    cluster = Cluster(env, tmp_path / "cluster.log")
    try:
        _wait_for(
            lambda: (
                database.scalar(
                    "SELECT count(*) FROM memories_webhookdelivery WHERE status = 'delivered'"
                )
                == 4
            ),
            cluster,
            timeout=180,
        )
    finally:
        cluster.stop()
        server.shutdown()
        server.server_close()
    killed = receiver.requests[held].webhook_id
    assert [r.webhook_id for r in receiver.requests].count(killed) == 2  # at least once
    assert len(receiver.unique()) == 4  # the receiver dedupes by webhook-id
