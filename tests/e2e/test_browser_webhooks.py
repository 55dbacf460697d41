"""The namespace page's webhooks in a real browser (docs/webhooks.md): by keyboard on a
375 px phone, to a real local receiver (tests/support/receiver.py), and without
JavaScript. The fixtures and helpers are test_browser.py's; tasks run synchronously in the
test settings, so a memory written here is delivered before the write returns.

Screenshots come after the htmx swaps of a page: Playwright hides the caret with a style
attribute on every input, which htmx's settle would copy onto the new inputs of the same
id, against the Content-Security-Policy (a console error)."""

from __future__ import annotations

import json
import re

import pytest

from memories import services
from memories.models import WebhookDelivery, WebhookSubscription
from memories.services import webhooks as hooks
from tests.e2e.test_browser import (  # noqa: F401 (fixtures)
    _new_page,
    browser,
    console,
    log_in,
    shot,
)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
]

PHONE = {"viewport": {"width": 375, "height": 740}, "is_mobile": True, "has_touch": True}
# A long path without a break: the layout must wrap it, not scroll the page sideways.
LONG_PATH = "/" + "x" * 90


@pytest.fixture
def phone(browser, console, live_server):  # noqa: F811
    context, page = _new_page(browser, console, base_url=live_server.url, **PHONE)
    yield page
    context.close()
    assert console.unexpected() == [], console.unexpected()


@pytest.fixture
def no_js(browser, console, live_server):  # noqa: F811
    context, page = _new_page(
        browser, console, base_url=live_server.url, java_script_enabled=False, **PHONE
    )
    yield page
    context.close()
    assert console.unexpected() == [], console.unexpected()


def fits(page) -> None:
    """No sideways scroll of the page itself (tables scroll inside their card). A phone
    widens its layout viewport to the content, so innerWidth must stay the phone's too."""
    width = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1] <= PHONE["viewport"]["width"], (page.url, width)


def focused(page) -> dict:
    """The focused element: its tag, accessible text, and whether its focus ring shows."""
    return page.evaluate(
        r"""() => {
            const el = document.activeElement;
            const style = getComputedStyle(el);
            return {
                tag: el.tagName.toLowerCase(),
                id: el.id,
                text: (el.innerText || el.value || '').replace(/\s+/g, ' ').trim(),
                ring: style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) > 0,
            };
        }"""
    )


def tab_to(page, name: str | re.Pattern[str], limit: int = 150) -> dict:
    """Press Tab until a control whose text is `name` has the focus (its ring showing)."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        now = focused(page)
        text = now["text"]
        if (name.search(text) if isinstance(name, re.Pattern) else text == name) and now["ring"]:
            return now
    raise AssertionError(f"Tab never reached {name!r}; last {focused(page)}")


def test_it_adds_a_webhook_by_keyboard_on_a_phone_and_shows_its_secret_once(
    phone, user, namespace, receiver
):
    log_in(phone)
    phone.goto(f"/namespaces/{namespace.slug}/")
    fits(phone)
    assert phone.get_by_text("No webhooks yet").is_visible()
    tab_to(phone, "Add a webhook")
    phone.keyboard.press("Enter")  # opens the <details>
    phone.keyboard.press("Tab")
    assert focused(phone)["id"] == phone.get_by_label("URL").get_attribute("id")
    phone.keyboard.type(receiver.url + LONG_PATH)
    # Every event is checked by default: leave only memory.created and memory.forgotten.
    events = phone.get_by_role("group", name="Events")
    for name in ("memory.updated", "memory.restored", "memory.superseded"):
        box = events.get_by_label(name, exact=True)
        box.focus()
        phone.keyboard.press("Space")
        assert not box.is_checked()
    ceiling = phone.get_by_label("Ceiling")
    ceiling.focus()
    assert focused(phone)["ring"]
    phone.keyboard.press("ArrowUp")  # internal (the default) to public
    assert ceiling.input_value() == "0"
    phone.locator("#webhooks").get_by_label("Description").fill("CI receiver")
    tab_to(phone, "Add webhook")
    phone.keyboard.press("Enter")

    secret = phone.locator("[data-secret]")
    secret.wait_for()
    subscription = WebhookSubscription.objects.get()
    assert secret.inner_text().strip() == subscription.secret
    assert subscription.url == receiver.url + LONG_PATH
    assert subscription.description == "CI receiver"
    assert "memory.updated" not in subscription.events
    assert "memory.created" in subscription.events
    assert subscription.get_ceiling_display() == "public"
    copy = phone.get_by_role("button", name="Copy")
    assert copy.is_visible()
    fits(phone)
    shot(phone, "phone-webhook-secret")

    phone.reload()  # the secret is shown only once
    assert phone.locator("[data-secret]").count() == 0
    assert (
        phone.locator("#webhooks").get_by_role("link").first.inner_text().startswith(receiver.url)
    )
    assert WebhookSubscription.objects.count() == 1
    fits(phone)
    phone.goto(f"/namespaces/{namespace.slug}/")
    assert phone.locator("[data-secret]").count() == 0
    assert subscription.secret not in phone.content()


def test_it_shows_the_log_toggles_and_redelivers_by_keyboard_on_a_phone(
    phone, user, namespace, receiver
):
    subscription = hooks.webhook_subscription_create(
        namespace=namespace, url=receiver.url + LONG_PATH, description="CI receiver"
    )
    memory = services.memory_create(namespace=namespace, content="Delivered to the receiver.")
    assert len(receiver.requests) == 1
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == WebhookDelivery.Status.DELIVERED

    log_in(phone)
    phone.goto(f"/namespaces/{namespace.slug}/")
    fits(phone)
    tab_to(phone, "Disable" + f" {subscription.url}")
    phone.keyboard.press("Enter")
    phone.locator(".message-success").wait_for()
    assert "disabled" in phone.locator(".message-success").inner_text()
    row = phone.locator("#webhooks tbody tr")
    assert "Disabled" in row.inner_text()
    assert focused(phone)["text"] == f"Enable {subscription.url}"  # focus stays on it
    subscription.refresh_from_db()
    assert not subscription.enabled
    phone.keyboard.press("Enter")
    phone.wait_for_function(
        "() => document.querySelector('#webhooks tbody tr').innerText.includes('Enabled')"
    )
    subscription.refresh_from_db()
    assert subscription.enabled
    fits(phone)
    shot(phone, "phone-webhooks")

    link = phone.locator("#webhooks tbody").get_by_role("link")
    link.focus()
    assert focused(phone)["ring"]
    phone.keyboard.press("Enter")
    phone.wait_for_url(re.compile(rf"/webhooks/{subscription.pk}/$"))
    log = phone.locator("#delivery-log")
    assert "memory.created" in log.inner_text()
    assert f"#{memory.pk}" in log.inner_text()
    assert "Delivered" in log.inner_text()
    assert "HTTP 200" in log.inner_text()
    fits(phone)

    summary = log.locator("summary").first
    summary.focus()
    phone.keyboard.press("Enter")  # the payload
    assert "Delivered to the receiver." in log.locator("pre").inner_text()
    fits(phone)

    tab_to(phone, re.compile(r"^Redeliver"))
    phone.keyboard.press("Enter")
    phone.locator(".message-success").wait_for()
    assert delivery.webhook_id in phone.locator(".message-success").inner_text()
    assert len(receiver.requests) == 2
    assert receiver.requests[1].webhook_id == receiver.requests[0].webhook_id
    assert focused(phone)["text"].startswith("Redeliver")
    delivery.refresh_from_db()
    assert delivery.attempts == 2
    assert "2" in phone.locator("#delivery-log tbody tr td").nth(2).inner_text()
    fits(phone)
    shot(phone, "phone-webhook-log")

    # A subscription disabled after failures says why, on both pages, without overflowing.
    WebhookSubscription.objects.filter(pk=subscription.pk).update(
        enabled=False, disabled_reason="Disabled after 10 failed deliveries in a row (HTTP 500)."
    )
    phone.reload()
    assert "Disabled after 10" in phone.get_by_role("alert").inner_text()
    fits(phone)
    phone.goto(f"/namespaces/{namespace.slug}/")
    assert "Disabled after 10" in phone.get_by_role("alert").inner_text()
    fits(phone)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://x", "Enter a valid URL."),
        ("ftp://example.com/hook", "Only http and https URLs."),
        ("http://10.0.0.1/", "10.0.0.1 is a private or reserved address"),
        ("http://169.254.169.254/latest", "169.254.169.254 is a link-local address"),
    ],
)
def test_a_refused_url_is_a_clear_error_on_the_form(phone, user, namespace, url, message):
    log_in(phone)
    phone.goto(f"/namespaces/{namespace.slug}/")
    tab_to(phone, "Add a webhook")
    phone.keyboard.press("Enter")
    phone.keyboard.press("Tab")
    phone.keyboard.type(url)
    tab_to(phone, "Add webhook")
    with phone.expect_response(re.compile(r"/webhooks/new$")) as answer:
        phone.keyboard.press("Enter")
    assert answer.value.status == 200
    field = phone.get_by_label("URL")
    field.wait_for()
    error = phone.locator("#webhooks .errorlist")
    assert message in error.inner_text()
    assert field.input_value() == url  # kept, to correct
    assert focused(phone)["id"] == field.get_attribute("id")  # the mistake has the focus
    assert not WebhookSubscription.objects.exists()
    fits(phone)
    shot(phone, "phone-webhook-refused")


def test_it_works_without_javascript(no_js, user, namespace, receiver):
    log_in(no_js)
    no_js.goto(f"/namespaces/{namespace.slug}/")
    no_js.get_by_text("Add a webhook").click()  # <details> needs no script
    no_js.get_by_label("URL").fill("http://10.0.0.1/")
    with no_js.expect_response(re.compile(r"/webhooks/new$")) as answer:
        no_js.get_by_role("button", name="Add webhook").click()
    assert answer.value.status == 200
    assert "private or reserved" in no_js.locator("#webhooks .errorlist").inner_text()
    assert no_js.evaluate("document.activeElement.id") == "id_webhook_url"
    no_js.get_by_label("URL").fill(receiver.url)  # the form is still open
    no_js.get_by_role("button", name="Add webhook").click()
    secret = no_js.locator("[data-secret]")
    secret.wait_for()
    subscription = WebhookSubscription.objects.get()
    assert secret.inner_text().strip() == subscription.secret
    fits(no_js)

    no_js.get_by_role("button", name=f"Disable {receiver.url}").click()
    no_js.wait_for_url(re.compile(rf"/namespaces/{namespace.slug}/$"))
    assert "disabled" in no_js.locator(".message-success").inner_text()
    assert no_js.locator("[data-secret]").count() == 0
    no_js.get_by_role("button", name=f"Enable {receiver.url}").click()
    assert "enabled" in no_js.locator(".message-success").inner_text()
    subscription.refresh_from_db()
    assert subscription.enabled

    services.memory_create(namespace=namespace, content="Sent while scripts are off.")
    assert len(receiver.requests) == 1
    no_js.locator("#webhooks tbody").get_by_role("link").click()
    no_js.wait_for_url(re.compile(rf"/webhooks/{subscription.pk}/$"))
    no_js.locator("#delivery-log summary").click()
    payload = no_js.locator("#delivery-log pre").inner_text()
    assert "Sent while scripts are off." in payload
    assert json.loads(payload)["type"]  # the JSON the receiver got, not Python's repr
    no_js.get_by_role("button", name=re.compile(r"^Redeliver")).click()
    no_js.wait_for_url(re.compile(rf"/webhooks/{subscription.pk}/$"))
    assert "queued again" in no_js.locator(".message-success").inner_text()
    assert len(receiver.requests) == 2
    fits(no_js)

    no_js.get_by_role("button", name="Disable").click()
    no_js.wait_for_url(re.compile(rf"/webhooks/{subscription.pk}/$"))
    assert "Disabled" in no_js.locator("dl.meta").inner_text()
    # Deleting asks first: the first click only opens the question.
    no_js.locator("details.confirm summary", has_text="Delete").click()
    assert WebhookSubscription.objects.exists()
    no_js.get_by_role("button", name="Delete with its log").click()
    no_js.wait_for_url(re.compile(rf"/namespaces/{namespace.slug}/$"))
    assert "deleted" in no_js.locator(".message-success").inner_text()
    assert not WebhookSubscription.objects.exists()
