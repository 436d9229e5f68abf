"""The HTTP service under generated junk (hypothesis): arbitrary JSON, near-valid bodies with one field
replaced, raw NaN/Infinity tokens, lone surrogates, invalid UTF-8, odd content types, arbitrary path
segments and query strings. Whatever arrives, the answer is a 2xx or a 4xx in the one error shape, never
a 5xx, and the store afterwards holds every tool and exactly the outcomes the 200 feedback calls made.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from urllib.parse import quote

from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st

from rated import Tool
from rated.encode.testing import HashEncoder
from rated.outcome import OutcomeKind
from rated.retriever import Retriever
from rated.service import Settings, create_app

IDS = ("mail.a", "mail.b", "weather", "ns/with/slash", "café")
MAX_BODY = 64 * 1024  # a 10,001-character query fits: it gets QueryError, not 413
MAX_DETAIL = 1000
MAX_CATALOG_DETAIL = 4000
FUZZ = settings.get_profile("fuzz-100")  # per property, three of them, ~5 s (tests/conftest.py)


def catalog() -> list[Tool]:
    names = ("send_email", "email_send", "weather_forecast", "calendar", "coffee_order")
    return [
        Tool(id=i, name=n, description=f"{n.replace('_', ' ')} tool", parameters={"type": "object"})
        for i, n in zip(IDS, names, strict=True)
    ]


# ---- strategies ------------------------------------------------------------------------------------------
SURROGATES = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF, categories=["Cs"])
ODD_TEXT = st.sampled_from(
    [
        "",
        " ",
        "\t\n",
        "\x00",
        "\u200b",  # zero-width space
        "\ufeff",
        "\U0001f4e7 email",
        "cafe\u0301",  # the NFD spelling of a catalog id
        "e\u0301" * 50,
        "\ud800",
        "a\udfffb",
        "../../etc/passwd",
        "%00",
        "NaN",
        "Infinity",
        "null",
        "success",
        " SUCCESS ",
    ]
)
# over the 10,000-character query limit (built, not listed: a strategy's repr quotes what it lists)
LONG = st.sampled_from(["x", "é", "\U0001f4e7"]).map(lambda c: c * 10_001)
TEXT = st.one_of(
    LONG,
    st.text(max_size=40),
    st.text(st.characters(codec=None, categories=None) | SURROGATES, max_size=20),
    ODD_TEXT,
    st.sampled_from(IDS),
)
FLOATS = st.floats() | st.sampled_from([math.nan, math.inf, -math.inf, -0.0, 1e308, -1e-320])
NUMBERS = st.integers() | st.sampled_from([10**30, -(10**30), 2**63, 2**64 + 1]) | FLOATS
SCALARS = st.none() | st.booleans() | NUMBERS | TEXT
URL_TEXT = TEXT.map(lambda s: s[:1000])  # a client refuses URLs over 64 KiB before sending them
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12,
)


@st.composite
def near_valid(draw: st.DrawFn, fields: dict[str, st.SearchStrategy]) -> dict:
    """A body of the right shape, some fields dropped, replaced by arbitrary JSON, or added."""
    body = {}
    for name, valid in fields.items():
        choice = draw(st.sampled_from(["valid", "valid", "valid", "junk", "drop"]))
        if choice == "valid":
            body[name] = draw(valid)
        elif choice == "junk":
            body[name] = draw(JSON)
    body.update(draw(st.dictionaries(TEXT, JSON, max_size=2)))
    if draw(st.integers(0, 9)) == 0:  # a long key, or hundreds of unknown fields
        many = draw(st.sampled_from([(1, 2000), (300, 1)]))
        body.update({f"{i}".ljust(many[1], "k"): i for i in range(many[0])})
    return body


QUERY = st.sampled_from(["send an email", "weather in Oslo", "calendar"]) | TEXT
K = st.integers(1, 3) | st.integers(-5, 100) | NUMBERS
OUTCOME = st.sampled_from([k.value for k in OutcomeKind]) | TEXT
RETRY = st.none() | st.integers(-10, 100) | FLOATS
STATUS = st.sampled_from([200, 400, 401, 429, 503, 504]) | st.integers(-10, 1000) | NUMBERS
VALID_HINTS = st.sampled_from(["30", "0", "1.5", "Wed, 21 Oct 2015 07:28:00 GMT", "-1", "soon"])
HINTS = VALID_HINTS | TEXT
HEADER_NAMES = st.sampled_from(["Retry-After", "retry-after-ms", "RateLimit-Reset", "X-RateLimit-Reset"])
HEADERS = st.dictionaries(HEADER_NAMES | TEXT, HINTS | JSON, max_size=4)
FILTER_VALUE = st.lists(st.sampled_from([*IDS, "none", "oauth2", "n8n"]) | TEXT, max_size=3) | TEXT | JSON
WHERE = (
    st.fixed_dictionaries(  # rated.tool_filter's keys; unknown ones and junk values as well
        {}, optional=dict.fromkeys(["tools", "exclude", "source", "tags", "provider", "auth"], FILTER_VALUE)
    )
    | JSON
)
BODIES = {
    "/retrieve": near_valid({"query": QUERY, "k": K, "where": WHERE}),
    "/retrieve/batch": near_valid({"queries": st.lists(QUERY, max_size=4), "k": K, "where": WHERE}),
    "/feedback": near_valid(
        {
            "tool_id": st.sampled_from(IDS) | TEXT,
            "outcome": OUTCOME,
            "status": STATUS,
            "headers": HEADERS,
            "query": QUERY,
            "retry_after": RETRY,
        }
    ),
}
FEEDBACK_OPTIONAL = {
    "query": st.none() | st.sampled_from(["send an email", "\U0001f4e7 mail"]),
    "retry_after": st.none() | st.integers(0, 10**6) | st.floats(0, 1e308),
}
FEEDBACK_IDS = st.sampled_from([*IDS, "cafe\u0301"])  # either Unicode form of an id
VALID_FEEDBACK = st.fixed_dictionaries(
    {
        "tool_id": FEEDBACK_IDS,
        "outcome": st.sampled_from([k.value for k in OutcomeKind] + [" Success ", "TIMEOUT"]),
    },
    optional=FEEDBACK_OPTIONAL,
) | st.fixed_dictionaries(
    {"tool_id": FEEDBACK_IDS, "status": st.integers(100, 599)},
    optional={**FEEDBACK_OPTIONAL, "headers": st.dictionaries(HEADER_NAMES, VALID_HINTS, max_size=3)},
)
CONTENT_TYPES = st.sampled_from(
    [
        "application/json",
        "application/json; charset=utf-8",
        "application/vnd.api+json",
        "text/plain",
        "application/x-www-form-urlencoded",
        "",
        "application/json; charset=latin-1",
        "multipart/form-data; boundary=x",
        "\u00e9/\u00e9",
    ]
)


@st.composite
def wire_body(draw: st.DrawFn, route: str) -> bytes:
    """The bytes sent: JSON (NaN/Infinity as raw tokens, surrogates escaped or as invalid UTF-8), cut
    short, or arbitrary bytes."""
    value = draw(BODIES[route] | JSON)
    text = json.dumps(value, allow_nan=True, ensure_ascii=draw(st.booleans()))
    raw = text.encode("utf-8", "surrogatepass")
    how = draw(st.sampled_from(["whole", "whole", "whole", "cut", "bytes", "huge", "deep", "digits"]))
    if how == "deep":  # past the parser's recursion limit, well under the body limit
        return text.replace("{", "[" * 5000 + "{", 1).encode("utf-8", "surrogatepass") + b"]" * 5000
    if how == "digits":  # a number over Python's 4,300-digit int conversion limit
        return text.replace("{", '{"n": ' + "9" * 4301 + ", ", 1).encode("utf-8", "surrogatepass")
    if how == "cut":
        return raw[: draw(st.integers(0, max(0, len(raw) - 1)))]
    if how == "bytes":
        return draw(st.binary(max_size=64))
    if how == "huge":  # over the body limit, still JSON
        return json.dumps({"query": "x" * (MAX_BODY + 1)}).encode()
    return raw


# ---- the service -----------------------------------------------------------------------------------------
def _check_answer(r, context: object, max_detail: int = MAX_DETAIL) -> None:
    assert r.status_code < 500, (r.status_code, r.text[:500], context)
    if r.status_code >= 400:
        body = r.json()
        assert set(body) == {"error", "detail"}, (body, context)
        assert isinstance(body["error"], str) and isinstance(body["detail"], str) and body["detail"]
        assert "error parsing the body" not in body["detail"], context  # FastAPI's words for any failure
        # one readable line, not the caller's 10,000-character value echoed back
        assert len(body["detail"]) <= max_detail, (r.status_code, body["detail"][:500], context)


def test_http_service_never_answers_5xx_and_keeps_its_store(tmp_path):
    db = tmp_path / "fuzz.db"
    Retriever.from_catalog(catalog(), db=db, encoder=HashEncoder(64)).close()
    expected: Counter[tuple[str, str]] = Counter()  # (tool id, outcome) of every 200 feedback

    with Retriever.open(db, encoder=HashEncoder(64)) as served:
        app = create_app(
            Settings(default_k=2, max_k=3, max_batch=3, max_body_bytes=MAX_BODY), retriever=served
        )
        with TestClient(app, raise_server_exceptions=False) as client:

            @FUZZ
            @given(
                route=st.sampled_from(sorted(BODIES)),
                data=st.data(),
                content_type=CONTENT_TYPES | st.none(),
            )
            def post(route: str, data: st.DataObject, content_type: str | None) -> None:
                raw = data.draw(wire_body(route))
                headers = {} if content_type is None else {"content-type": content_type.encode("latin-1")}
                r = client.post(route, content=raw, headers=headers)
                _check_answer(r, (route, raw[:300], content_type))
                if route == "/feedback" and r.status_code == 200:
                    out = r.json()
                    expected[out["tool_id"], out["outcome"]] += 1
                # and a valid report between the junk: it is recorded, whatever came before
                valid = data.draw(VALID_FEEDBACK)
                r = client.post("/feedback", json=valid)
                assert r.status_code == 200, (valid, r.text[:500])
                expected[r.json()["tool_id"], r.json()["outcome"]] += 1

            @FUZZ
            @given(
                segment=URL_TEXT | st.binary(max_size=30),
                params=st.dictionaries(URL_TEXT, URL_TEXT, max_size=3),
            )
            def get(segment: str | bytes, params: dict[str, str]) -> None:
                path = (
                    quote(segment, safe="")
                    if isinstance(segment, bytes)
                    else quote(segment.encode("utf-8", "surrogatepass"), safe="/")
                )
                query = "&".join(
                    f"{quote(k.encode('utf-8', 'surrogatepass'))}={quote(v.encode('utf-8', 'surrogatepass'))}"
                    for k, v in params.items()
                )
                for url in (f"/tools/{path}", f"/tools?{query}"):
                    _check_answer(client.get(url), url)

            @FUZZ
            @given(
                route=st.sampled_from(["/dashboard", "/tools"]),
                params=st.dictionaries(
                    st.sampled_from(["minutes", "refresh", "recent", "unhealthy"]) | URL_TEXT,
                    st.integers().map(str)
                    | st.sampled_from(["NaN", "1e3", "-0", "1.5", "true", ""])
                    | URL_TEXT,
                    max_size=3,
                ),
            )
            def query_strings(route: str, params: dict[str, str]) -> None:
                query = "&".join(
                    f"{quote(k.encode('utf-8', 'surrogatepass'))}={quote(v.encode('utf-8', 'surrogatepass'))}"
                    for k, v in params.items()
                )
                _check_answer(client.get(f"{route}?{query}"), (route, params))

            post()
            get()
            query_strings()
            # the chart (a quarter second to draw: not fuzzed) takes the same minutes as /dashboard
            for minutes in ("0", "1441", "-1", "1.5", "NaN", "%00", "9" * 30):
                _check_answer(client.get(f"/dashboard/outcomes.png?minutes={minutes}"), minutes)
            for url in ("/dashboard/outcomes.png?minutes=1440", "/dashboard?recent=500", "/tools"):
                assert client.get(url).status_code == 200, url  # over every outcome the fuzzing left
            assert client.get("/tools").json()["count"] == len(IDS)

    # the store, reopened from disk: every tool, and exactly the outcomes the 200s reported
    with Retriever.open(db, encoder=HashEncoder(64)) as reopened:
        assert [(h.tool.id, h.tool.name) for h in reopened.tools()] == [(t.id, t.name) for t in catalog()]
        records = reopened.outcomes(limit=None)
        assert Counter((r.tool_id, r.outcome) for r in records) == expected
        for health in reopened.tools():
            mine = {o: n for (t, o), n in expected.items() if t == health.tool.id}
            stats = health.to_dict()
            assert stats["successes"] == mine.get("success", 0)
            assert stats["caller_errors"] == mine.get("caller_error", 0)
            assert stats["failures"] == sum(mine.values()) - stats["successes"] - stats["caller_errors"]
    assert sum(expected.values()) > 0, "no feedback call was valid: the strategy tests nothing"


TOOL = near_valid(
    {
        "id": st.sampled_from([*IDS, "cafe\u0301", "new", "new/x"]) | TEXT,
        "name": st.sampled_from(["send_sms", "x"]) | TEXT,
        "description": TEXT,
        "tags": st.lists(TEXT, max_size=2) | TEXT,
        "parameters": JSON,
        "extra": JSON,
    }
)
WRITE_IDS = st.sampled_from([*IDS, "cafe\u0301", "new", "new/x", "new%2Fy", "n e w"])
VALID_TOOLS = st.lists(
    st.fixed_dictionaries(
        {"id": WRITE_IDS | st.text(min_size=1, max_size=8), "name": st.sampled_from(["send_sms", "x"])},
        optional={"description": TEXT.map(lambda s: s[:50])},
    ),
    min_size=1,
    max_size=3,
)
WRITES = st.one_of(
    st.tuples(st.just("post"), near_valid({"tools": st.lists(TOOL | JSON, max_size=3)})),
    st.tuples(st.just("post"), st.fixed_dictionaries({"tools": VALID_TOOLS})),
    st.tuples(st.just("put"), near_valid({"tools": st.lists(TOOL | JSON, max_size=3), "prune": JSON})),
    st.tuples(
        st.just("put"), st.fixed_dictionaries({"tools": VALID_TOOLS}, optional={"prune": st.booleans()})
    ),
    st.tuples(st.just("delete"), WRITE_IDS | URL_TEXT),
)


def test_catalog_writes_never_answer_5xx_and_the_store_holds_what_the_2xx_said(tmp_path):
    """POST, PUT and DELETE /tools under junk: a 2xx or a one-shape 4xx, and the ids the store holds
    afterwards are exactly the ones the 2xx answers added and did not remove."""
    db = tmp_path / "writes.db"
    Retriever.from_catalog(catalog(), db=db, encoder=HashEncoder(64)).close()
    ids = set(IDS)
    changed: Counter[str] = Counter()  # 2xx answers by method
    with Retriever.open(db, encoder=HashEncoder(64)) as served:
        app = create_app(Settings(max_body_bytes=MAX_BODY), retriever=served)
        with TestClient(app, raise_server_exceptions=False) as client:

            @FUZZ
            @given(write=WRITES, ascii_only=st.booleans())
            def write(write: tuple[str, object], ascii_only: bool) -> None:
                method, what = write
                if method == "delete":
                    url = "/tools/" + quote(str(what).encode("utf-8", "surrogatepass"), safe="/")
                    r = client.delete(url)
                else:
                    raw = json.dumps(what, allow_nan=True, ensure_ascii=ascii_only)
                    headers = {"content-type": "application/json"}
                    r = client.request(
                        method, "/tools", content=raw.encode("utf-8", "surrogatepass"), headers=headers
                    )
                # a catalog error lists up to 20 problems, one line each (a field name clipped)
                _check_answer(r, (method, str(what)[:300]), max_detail=MAX_CATALOG_DETAIL)
                if r.status_code < 300:
                    out = r.json()
                    ids.update(out.get("added", ()))
                    removed = out.get("removed", ())
                    ids.difference_update([removed] if isinstance(removed, str) else removed)
                    changed[method] += 1
                assert {t["id"] for t in client.get("/tools").json()["data"]} == ids, (method, r.text[:300])

            write()
    with Retriever.open(db, encoder=HashEncoder(64)) as reopened:
        assert {h.tool.id for h in reopened.tools()} == ids
    assert set(changed) == {"post", "put", "delete"}, f"a write never succeeded: {changed}"


# ---- what the fuzzing found, pinned ----------------------------------------------------------------------
def test_errors_quote_the_callers_names_and_values_short():
    with (
        Retriever.from_catalog(catalog(), encoder=HashEncoder(64)) as retriever,
        TestClient(create_app(Settings(), retriever=retriever)) as client,
    ):
        long_key = client.post("/retrieve", json={"query": "send an email", "k" * 2000: 1})
        many_keys = client.post(
            "/retrieve", json={"query": "send an email", **{f"x{i}": i for i in range(300)}}
        )
        long_id = client.get("/tools/" + "t" * 3000)
        long_outcome = client.post("/feedback", json={"tool_id": "mail.a", "outcome": "o" * 5000})
    assert long_key.status_code == 422 and len(long_key.json()["detail"]) < 200  # was 2,037 characters
    assert (
        long_key.json()["detail"]
        == "body.kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk...: Extra inputs are not permitted"
    )
    detail = many_keys.json()["detail"]  # was one problem per key: 300 of them
    assert detail.startswith("body.x0: Extra inputs are not permitted; body.x1: ") and detail.endswith(
        "and 295 more"
    )
    assert long_id.status_code == 404 and "(3,000 characters)" in long_id.json()["detail"]
    assert len(long_id.json()["detail"]) < 300
    assert (
        long_outcome.status_code == 422
        and "(5,000 characters); expected one of: success" in long_outcome.text
    )
    assert retriever.outcomes(limit=None) == []
