"""Sign-in is throttled (django-axes), an administrator can unlock, there is no password
reset route, and every page carries a strict Content-Security-Policy (issue 13, item 9)."""

from __future__ import annotations

import pytest
from axes.models import AccessAttempt
from django.contrib.auth import get_user_model
from django.test import override_settings
from django.urls import NoReverseMatch, reverse

pytestmark = pytest.mark.django_db

PASSWORD = "pw-ada-12345"


@pytest.fixture
def ada(db):
    return get_user_model().objects.create_user("ada", password=PASSWORD)


def _login(client, username: str, password: str, address: str = "10.0.0.1", **extra):
    return client.post(
        reverse("login"),
        {"username": username, "password": password},
        REMOTE_ADDR=address,
        **extra,
    )


@override_settings(AXES_FAILURE_LIMIT=3)
def test_failed_sign_ins_lock_that_user_from_that_address_with_a_clear_message(
    client, ada, nothing_written
):
    for _ in range(2):
        response = _login(client, "ada", "wrong")
        assert response.status_code == 200
        assert b"didn&#x27;t match" in response.content or b"didn't match" in response.content
    with nothing_written():  # but django-axes' own records of the attempts
        locked = _login(client, "ada", "wrong")
    assert locked.status_code == 429
    assert b"Too many failed attempts" in locked.content
    # Locked means locked: the right password does not get through either (no last_login).
    with nothing_written():
        right = _login(client, "ada", PASSWORD)
    assert right.status_code == 429
    assert "_auth_user_id" not in client.session
    # Another address, and another user from the same address, are not locked.
    assert _login(client, "ada", PASSWORD, address="10.0.0.2").status_code == 302


@override_settings(AXES_FAILURE_LIMIT=3)
def test_a_success_before_the_limit_resets_the_count(client, ada):
    for _ in range(2):
        _login(client, "ada", "wrong")
    assert _login(client, "ada", PASSWORD).status_code == 302
    client.logout()
    for _ in range(2):
        _login(client, "ada", "wrong")
    assert _login(client, "ada", PASSWORD).status_code == 302


@override_settings(AXES_FAILURE_LIMIT=2)
def test_an_administrator_unlocks_from_the_admin(client, ada):
    for _ in range(2):
        _login(client, "ada", "wrong")
    assert _login(client, "ada", PASSWORD).status_code == 429
    attempt = AccessAttempt.objects.get(username="ada")

    admin = get_user_model().objects.create_superuser("root", password="pw-root-12345")
    admin_client = type(client)()
    admin_client.force_login(admin)
    changelist = reverse("admin:axes_accessattempt_changelist")
    page = admin_client.get(changelist)
    assert page.status_code == 200 and b"ada" in page.content
    confirmed = admin_client.post(
        changelist,
        {"action": "delete_selected", "_selected_action": [attempt.pk], "post": "yes"},
    )
    assert confirmed.status_code == 302
    assert not AccessAttempt.objects.exists()
    assert _login(client, "ada", PASSWORD).status_code == 302


@override_settings(AXES_FAILURE_LIMIT=2, BEHIND_PROXY=True)
def test_behind_the_proxy_the_address_is_the_one_the_proxy_appended(client, ada):
    # A client cannot dodge the lock by sending its own X-Forwarded-For entries.
    for forged in ("1.1.1.1", "2.2.2.2"):
        _login(client, "ada", "wrong", HTTP_X_FORWARDED_FOR=f"{forged}, 10.9.9.9")
    response = _login(client, "ada", PASSWORD, HTTP_X_FORWARDED_FOR="3.3.3.3, 10.9.9.9")
    assert response.status_code == 429
    assert AccessAttempt.objects.get().ip_address == "10.9.9.9"


def test_there_is_no_password_reset_route(client):
    with pytest.raises(NoReverseMatch):
        reverse("password_reset")
    assert client.get("/accounts/password_reset/").status_code == 404
    assert client.get(reverse("login")).status_code == 200


@pytest.mark.parametrize("path", ["/accounts/login/", "/", "/admin/login/"])
def test_pages_carry_a_strict_content_security_policy(client, ada, path):
    client.force_login(ada)
    response = client.get(path, follow=True)
    policy = response["Content-Security-Policy"]
    directives = dict(
        (part.strip().split(" ", 1) + [""])[:2] for part in policy.split(";") if part.strip()
    )
    assert directives["default-src"] == "'self'"
    assert directives["script-src"] == "'self'"
    assert directives["style-src"] == "'self'"
    assert directives["frame-ancestors"] == "'none'"
    assert "unsafe" not in policy


def test_the_api_docs_relax_only_what_they_need(client):
    policy = client.get("/api/v1/docs")["Content-Security-Policy"]
    assert "'unsafe-inline'" in policy.split("style-src", 1)[1].split(";")[0]
    assert "unsafe" not in policy.split("script-src", 1)[1].split(";")[0]
