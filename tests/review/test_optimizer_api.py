"""POST/GET /api/v1/review/optimize and POST /api/v1/review/optimize/reset."""

from __future__ import annotations

import pytest

from memories import services as memory_services
from memories.models import Classification, Memory, Namespace
from review.services import optimize
from tests.review.test_optimizer import WRONG_PARAMETERS, add_review_history, synthetic_reviews

pytestmark = pytest.mark.django_db

URL = "/api/v1/review/optimize"


@pytest.fixture
def person(user) -> Namespace:
    namespace = memory_services.namespace_create(
        owner=user, name="Japanese", mode=Namespace.Mode.PERSONAL, scheduler="fsrs"
    )
    Namespace.objects.filter(pk=namespace.pk).update(fsrs_parameters=list(WRONG_PARAMETERS))
    namespace.refresh_from_db()
    return namespace


@pytest.fixture
def history(person):
    reviews = synthetic_reviews()
    add_review_history(person, reviews)
    return reviews


@pytest.fixture
def writer(user, make_token, api):
    _, secret = make_token(user, access="write")
    return api(secret)


def test_a_fit_in_the_request_answers_200_with_the_figures(writer, person, history):
    response = writer.post(URL, {"namespace": person.slug}, format="json")

    assert response.status_code == 200, response.json()
    body = response.json()
    fit = body["fit"]
    assert fit["status"] == "done" and fit["applied"] is True
    assert fit["after"]["log_loss"] < fit["before"]["log_loss"]
    assert set(fit["before"]) == set(fit["after"]) == {"log_loss", "rmse_bins"}
    assert fit["reviews"] == len(history) and fit["engine"].startswith("fsrs-rs-python")
    assert body["parameters"] == fit["parameters"] and len(body["parameters"]) == 21
    assert body["reviews"] == len(history) and body["min_reviews"] == 400
    person.refresh_from_db()
    assert person.fsrs_parameters == body["parameters"]


def test_below_the_minimum_it_answers_400_naming_the_namespace(writer, person, nothing_written):
    add_review_history(person, synthetic_reviews(cards=10))
    with nothing_written():
        response = writer.post(URL, {"namespace": person.slug}, format="json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "not_enough_reviews"
    assert list(error["fields"]) == ["namespace"]
    assert "at least 400" in error["message"] and "reviews of yours" in error["message"]


def test_a_large_history_answers_202_queued_and_the_worker_fits(
    writer, person, history, monkeypatch, django_capture_on_commit_callbacks
):
    monkeypatch.setattr(optimize, "OPTIMIZE_IN_REQUEST_MAX_REVIEWS", 100)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = writer.post(URL, {"namespace": person.slug}, format="json")
    assert response.status_code == 202
    assert response.json()["fit"]["status"] == "queued"
    assert response.json()["fit"]["reviews"] == len(history)

    callbacks[0]()  # committed: the task runs (sync in the test settings)
    after = writer.get(URL, {"namespace": person.slug}).json()
    assert after["fit"]["status"] == "done" and after["fit"]["before"]


def test_get_shows_the_parameters_in_use_and_the_last_fit(writer, person, history):
    before = writer.get(URL, {"namespace": person.slug})
    assert before.status_code == 200
    assert before.json()["fit"] is None and before.json()["parameters"] == list(WRONG_PARAMETERS)
    writer.post(URL, {"namespace": person.slug}, format="json")
    shown = writer.get(URL, {"namespace": person.slug}).json()
    assert shown["fit"]["status"] == "done"


def test_reset_goes_back_to_the_defaults(writer, person, history):
    writer.post(URL, {"namespace": person.slug}, format="json")
    response = writer.post(f"{URL}/reset", {"namespace": person.slug}, format="json")
    assert response.status_code == 200
    assert response.json()["parameters"] is None
    assert response.json()["fit"]["applied"] is False
    person.refresh_from_db()
    assert person.fsrs_parameters is None


def test_a_read_only_token_may_look_but_not_fit_or_reset(
    user, person, history, make_token, api, nothing_written
):
    _, secret = make_token(user, access="read")
    reader = api(secret)
    assert reader.get(URL, {"namespace": person.slug}).status_code == 200
    with nothing_written():
        assert reader.post(URL, {"namespace": person.slug}, format="json").status_code == 403
        reset = reader.post(f"{URL}/reset", {"namespace": person.slug}, format="json")
        assert reset.status_code == 403


def test_another_users_namespace_is_no_such_namespace(
    other_user, person, history, make_token, api, nothing_written
):
    _, secret = make_token(other_user)
    stranger = api(secret)
    with nothing_written():
        for path in (URL, f"{URL}/reset"):
            response = stranger.post(path, {"namespace": person.slug}, format="json")
            assert response.status_code == 400
            assert response.json()["error"]["fields"] == {"namespace": ["No such namespace."]}
    assert stranger.get(URL, {"namespace": person.slug}).status_code == 400


def test_a_token_below_the_ceiling_fits_on_what_it_may_see_and_is_not_told_the_rest(
    user, person, history, make_token, api
):
    Memory.objects.filter(namespace=person, content__endswith="0.").update(
        classification=Classification.RESTRICTED
    )
    _, secret = make_token(user, ceiling=Classification.INTERNAL)
    low = api(secret)
    mine = low.post(URL, {"namespace": person.slug}, format="json").json()
    visible = optimize.optimize_reviews(namespace=person, ceiling=Classification.INTERNAL)
    assert mine["reviews"] == mine["fit"]["reviews"] == visible.count() < len(history)

    # The dashboard's fit read every review: the low token sees its figures, not its counts.
    writer_secret = make_token(user, ceiling=Classification.RESTRICTED)[1]
    api(writer_secret).post(URL, {"namespace": person.slug}, format="json")
    seen = low.get(URL, {"namespace": person.slug}).json()["fit"]
    assert seen["reviews"] is None and "cards" not in seen and "eval_predictions" not in seen
    assert seen["before"] and seen["after"] and "above your classification" in seen["message"]
    assert len(history) not in seen.values() and str(len(history)) not in seen["message"]


def test_an_engine_failure_answers_422_and_writes_nothing(
    writer, person, history, monkeypatch, nothing_written
):
    from review import optimizer

    def broken(items):
        raise optimizer.OptimizerError("The FSRS engine could not fit these reviews: boom")

    monkeypatch.setattr(optimizer, "fit_parameters", broken)
    with nothing_written():
        response = writer.post(URL, {"namespace": person.slug}, format="json")
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "optimize_failed"


@pytest.mark.parametrize("body", [{}, {"namespace": 5}, {"namespace": "x", "extra": 1}])
def test_bad_input_names_the_field(writer, person, body, nothing_written):
    with nothing_written():
        response = writer.post(URL, body, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["fields"]
