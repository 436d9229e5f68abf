"""What the clients raise: each answer of the service as rated's own class (the message the retriever
would give), the API key refused, a failing or silent service as a ``ServiceError`` naming the URL, and
never a bare httpx exception."""

from __future__ import annotations

import json

import httpx
import pytest

from rated.client import RatedClient, ServiceAuthError, ServiceError, ServiceUnreachableError
from rated.errors import ConfigError, QueryError, RatedError, StoreBusyError, StoreError, UnknownToolError
from rated.retriever import Retriever
from rated.service import Settings, create_app

QUERY = "send an email message"
BASE = "http://rated.test"


def answering(status: int, body: object = None, *, text: str | None = None) -> RatedClient:
    """A client whose every request gets this answer (a proxy, another server, a broken service)."""
    content = text.encode() if text is not None else json.dumps(body).encode()
    transport = httpx.MockTransport(lambda request: httpx.Response(status, content=content))
    return RatedClient(BASE, transport=transport)


def raising(exc: Exception) -> RatedClient:
    def fail(request: httpx.Request) -> httpx.Response:
        raise exc

    return RatedClient(BASE + "/rated", transport=httpx.MockTransport(fail))


def test_an_unknown_tool_id_is_unknown_tool_error_with_the_id(client):
    for call in (
        lambda: client.feedback("nope", "success"),
        lambda: client.tool_health("nope"),
        lambda: client.track("nope"),
    ):
        with pytest.raises(UnknownToolError) as info:
            call()
        assert info.value.tool_id == "nope" and str(info.value) == "unknown tool id: 'nope'"


@pytest.mark.parametrize(
    ("detail", "tool_id"),
    [
        ("unknown tool id: 'gmail.send'", "gmail.send"),
        ("unknown tool id: 'a... (900 characters)", "'a... (900 characters)"),  # cut short: as shown
    ],
)
def test_an_unknown_id_the_request_did_not_name_is_read_from_the_message(detail, tool_id):
    """A request that names ids elsewhere than the path or ``tool_id`` (a filter of ``retrieve``)."""
    with pytest.raises(UnknownToolError) as info:
        answering(404, {"error": "UnknownToolError", "detail": detail}).retrieve(QUERY)
    assert info.value.tool_id == tool_id


def test_invalid_arguments_are_the_retrievers_classes_and_messages(client, retriever):
    with pytest.raises(QueryError) as remote:
        client.retrieve("x" * 20_000)
    with pytest.raises(QueryError) as local:
        retriever.retrieve("x" * 20_000)
    assert str(remote.value) == str(local.value)
    with pytest.raises(QueryError, match="not valid Unicode"):
        client.retrieve("\ud800")  # sent escaped: the service names it, as the retriever does
    with pytest.raises(QueryError, match=r"queries\[1\]: query is 20,000"):
        client.retrieve_many([QUERY, "x" * 20_000])


def test_the_services_own_limits_and_schema_are_config_errors(client):
    with pytest.raises(ConfigError, match=r"at most 5 tools \(max_k\)"):
        client.retrieve(QUERY, k=6)
    with pytest.raises(ConfigError, match="greater than or equal to 1"):
        client.retrieve(QUERY, k=0)
    with pytest.raises(ConfigError, match="body.format"):
        client.retrieve(QUERY, format="gemini")  # type: ignore[arg-type]
    with pytest.raises(QueryError, match=r"at most 3 \(max_batch\)"):
        client.retrieve_many([QUERY] * 4)
    with pytest.raises(ConfigError, match="cannot send the arguments as JSON"):
        client.retrieve(QUERY, k=object())  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="Retry-After"):
        client.feedback("mail.a", status=429, headers={"Retry-After": 30})  # type: ignore[dict-item]


def test_a_body_over_the_services_limit_is_a_config_error(connect, retriever):
    small = create_app(Settings(max_body_bytes=200), retriever=retriever)
    with pytest.raises(ConfigError, match="max_body_bytes"):
        connect(small).retrieve("send " * 100)


def test_numpy_numbers_are_sent_as_numbers(client):
    np = pytest.importorskip("numpy")
    assert len(client.retrieve(QUERY, k=np.int64(2))) == 2
    assert client.feedback("mail.a", "rate_limited", retry_after=np.float32(1.5)).outcome.retry_after == 1.5


def test_a_busy_or_gone_store_is_the_store_error_naming_the_service(client, retriever, monkeypatch):
    def busy(*args: object, **kwargs: object) -> None:
        raise StoreBusyError("the store stayed locked for 5.0 s")

    monkeypatch.setattr(Retriever, "retrieve", busy)
    with pytest.raises(StoreBusyError, match=r"service at http://rated.test/retrieve: the store stayed"):
        client.retrieve(QUERY)

    def gone(*args: object, **kwargs: object) -> None:
        raise StoreError("database is gone")

    monkeypatch.setattr(Retriever, "retrieve", gone)
    with pytest.raises(StoreError, match="database is gone") as info:
        client.retrieve(QUERY)
    assert not isinstance(info.value, StoreBusyError)


def test_a_stalled_store_is_the_store_error_naming_the_service(client, monkeypatch):
    from rated.store.base import StoreTimeoutError

    def stalled(*args: object, **kwargs: object) -> None:
        raise StoreTimeoutError("redis://r:6379/0: no reply in time")

    monkeypatch.setattr(Retriever, "retrieve", stalled)
    with pytest.raises(StoreError, match=r"service at http://rated.test/retrieve: redis://r:6379/0: no"):
        client.retrieve(QUERY)


def test_a_bug_in_the_service_is_a_service_error(client, monkeypatch):
    def bug(*args: object, **kwargs: object) -> None:
        raise RuntimeError("secret internals")

    monkeypatch.setattr(Retriever, "retrieve", bug)
    with pytest.raises(ServiceError, match=r"http://rated.test/retrieve answered 500 InternalError") as info:
        client.retrieve(QUERY)
    assert info.value.http_status == 500 and info.value.url == "http://rated.test/retrieve"
    assert "secret internals" not in str(info.value)


@pytest.fixture
def keyed(connect, retriever):
    """``keyed(**options)``: a client of a service whose API key is ``s3cret``."""
    app = create_app(Settings(api_key="s3cret"), retriever=retriever)
    return lambda **options: connect(app, **options)


def test_the_api_key_is_sent_as_the_service_expects(keyed, monkeypatch):
    monkeypatch.delenv("RATED_API_KEY", raising=False)
    assert keyed(api_key="s3cret").retrieve(QUERY, k=1)
    monkeypatch.setenv("RATED_API_KEY", "s3cret")
    assert keyed().feedback("mail.a", "success").recorded  # the service's own variable, read by default


def test_a_missing_or_wrong_key_is_an_auth_error_that_says_what_to_do(keyed, monkeypatch):
    monkeypatch.delenv("RATED_API_KEY", raising=False)
    said = r"needs its API key.*pass api_key= \(or set RATED_API_KEY\)"
    with pytest.raises(ServiceAuthError, match=said) as info:
        keyed().retrieve(QUERY)
    assert info.value.http_status == 401 and isinstance(info.value, ServiceError)
    with pytest.raises(ServiceAuthError, match="wrong API key.*check api_key") as info:
        keyed(api_key="guess").tools()
    assert "guess" not in str(info.value) and "s3cret" not in str(info.value)
    assert keyed().health().status == "ok"  # /health needs no key


def test_a_403_from_a_proxy_is_an_auth_error():
    with pytest.raises(ServiceAuthError, match="403 Forbidden"):
        answering(403, text="<html>denied</html>").health()


def test_a_base_url_with_a_wrong_path_says_so(connect):
    with pytest.raises(ServiceError, match=r"http://rated.test/api/retrieve is not a route.*base_url"):
        connect(base=BASE + "/api").retrieve(QUERY)


@pytest.mark.parametrize(
    ("status", "body", "said"),
    [
        (502, None, "answered 502 Bad Gateway: <html>bad gateway</html>, which is not a rated service"),
        (200, None, "answered 200 with a body this client cannot read"),
        (200, {"hits": []}, r"cannot read \(KeyError"),
        (404, {"detail": "Not Found"}, "answered 404 Not Found"),
        (418, {"error": "Teapot", "detail": "short and stout"}, "answered 418 Teapot: short and stout"),
    ],
)
def test_answers_no_rated_service_gives_are_service_errors(status, body, said):
    client = answering(status, body) if body else answering(status, text="<html>bad gateway</html>")
    with pytest.raises(ServiceError, match=said) as info:
        client.retrieve(QUERY)
    assert info.value.http_status == status and info.value.url == "http://rated.test/retrieve"


def test_another_servers_html_page_is_quoted_on_one_line_before_the_hint():
    """What `python -m http.server` (port 8000 too) answers a POST: the hint must not follow lines of HTML."""
    page = (
        "<!DOCTYPE HTML>\n<html lang='en'>\n    <head>\n        <meta charset='utf-8'>\n"
        "        <title>Error response</title>\n    </head>\n    <body>\n        <h1>Error response</h1>\n"
    )
    with pytest.raises(ServiceError) as info:
        answering(501, text=page).retrieve(QUERY)
    message = str(info.value)
    assert "\n" not in message
    assert "answered 501 Not Implemented: <!DOCTYPE HTML> <html lang='en'> <head> <meta" in message
    assert message.endswith("not a rated service's answer: is base_url the address of `rated serve`?")


@pytest.mark.parametrize(
    ("exc", "effect"),
    [
        (httpx.ConnectError("[Errno 111] Connection refused"), "the request was not sent"),
        (httpx.ConnectTimeout("timed out"), "the request was not sent"),
        (httpx.ReadTimeout("timed out"), "it may or may not have taken effect"),
        (httpx.RemoteProtocolError("peer closed the connection"), "it may or may not have taken effect"),
    ],
)
def test_no_answer_is_unreachable_naming_the_url_and_whether_it_was_sent(exc, effect):
    with pytest.raises(ServiceUnreachableError) as info:
        raising(exc).feedback("mail.a", "success")
    message = str(info.value)
    assert message.startswith("no answer from the rated service at http://rated.test/rated/feedback: ")
    assert type(exc).__name__ in message and effect in message
    assert info.value.http_status is None and isinstance(info.value.__cause__, httpx.TransportError)


def test_a_real_refused_connection_is_unreachable():
    """A port nothing listens on (the OS refuses at once: no network is used)."""
    with RatedClient("http://127.0.0.1:9", timeout=2) as client:
        with pytest.raises(ServiceUnreachableError, match="127.0.0.1:9/health.*not sent"):
            client.health()


@pytest.mark.parametrize("url", ["localhost:8000", "ftp://host", "http://", "", 8000])
def test_a_base_url_that_is_not_http_is_a_config_error(url):
    with pytest.raises(ConfigError, match="base_url"):
        RatedClient(url)  # type: ignore[arg-type]


def test_credentials_in_the_base_url_never_show_in_messages():
    client = RatedClient(
        "http://agent:hunter2@rated.test:8000/x/",
        transport=httpx.MockTransport(lambda request: httpx.Response(500, text="oops")),
    )
    with pytest.raises(ServiceError) as info:
        client.health()
    assert "hunter2" not in str(info.value) and info.value.url == "http://rated.test:8000/x/health"
    assert client.base_url == "http://rated.test:8000/x"


@pytest.mark.parametrize("key", ["", "  ", "s3cr\u00e9t", "s3cret\n", " s3cret"])
def test_an_api_key_no_header_can_carry_is_a_config_error_that_hides_it(key):
    with pytest.raises(ConfigError, match="api_key") as info:
        RatedClient(BASE, api_key=key)
    assert key.strip() == "" or key.strip() not in str(info.value)


def test_errors_are_rated_errors_never_bare_httpx(client):
    """The classes callers catch: a 404 is also a KeyError, a 422 a ValueError, as in-process."""
    with pytest.raises(KeyError):
        client.tool_health("nope")
    with pytest.raises(ValueError):
        client.retrieve("")
    with pytest.raises(RatedError):
        client.retrieve(QUERY, k=6)


@pytest.mark.parametrize(
    ("detail", "tool_id", "where"),
    [
        ("filter 'exclude': unknown tool id: 'gmail.send'", "gmail.send", "filter 'exclude'"),
        ("filter 'tools' (and 2 more): unknown tool id: 'a: b'", "a: b", "filter 'tools' (and 2 more)"),
        (
            "filter 'tools': unknown tool id: 'a... (900 characters)",
            "'a... (900 characters)",
            "filter 'tools'",
        ),
    ],
)
def test_a_filters_unknown_id_is_read_with_the_key_that_named_it(detail, tool_id, where):
    """The service's own shape for a filter (``UnknownToolError.where`` before the id): the id and the key
    come back apart, and the message reads as the service's."""
    with pytest.raises(UnknownToolError) as info:
        answering(404, {"error": "UnknownToolError", "detail": detail}).retrieve(
            QUERY, where={"tools": ["x"]}
        )
    assert (info.value.tool_id, info.value.where) == (tool_id, where)
    if not tool_id.startswith("'"):
        assert str(info.value) == detail
