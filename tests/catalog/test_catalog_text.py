from rated.catalog.schema import Tool
from rated.catalog.text import TextConfig, lexical_text, parameter_items, split_identifier, tool_text


def test_split_identifier_handles_camel_snake_kebab_dotted_and_acronyms():
    assert split_identifier("getUserInfo") == "get User Info"
    assert split_identifier("send_email-now") == "send email now"
    assert split_identifier("ChaDri.change_drink") == "Cha Dri change drink"
    assert split_identifier("parseHTMLPage2") == "parse HTML Page 2"
    assert split_identifier("PDF&URLTool") == "PDF URL Tool"


def _tool(**kw):
    base = dict(
        id="t1",
        name="get_current_weather",
        description="Get the weather   for a location.",
        parameters={
            "type": "object",
            "properties": {"cityName": {"type": "string", "description": "City, e.g. Paris"}, "unit": {}},
        },
        provider="OpenWeather",
        tags=("Weather", "forecast"),
    )
    base.update(kw)
    return Tool(**base)


def test_tool_text_orders_name_description_parameters_provider_tags():
    text = tool_text(_tool())
    assert text == (
        "get current weather: Get the weather for a location. "
        "Parameters: city Name (City, e.g. Paris); unit. "
        "Provider: Open Weather. Tags: Weather, forecast."
    )


def test_tool_text_options_and_bound():
    text = tool_text(_tool(), TextConfig(parameters=False, provider=False, tags=False))
    assert text == "get current weather: Get the weather for a location."
    long = _tool(description="word " * 1000)
    bounded = tool_text(long, TextConfig(max_chars=100))
    assert len(bounded) <= 100 and bounded.startswith("get current weather:")


def test_lexical_text_keeps_raw_identifier_and_parameter_items_reads_flat_maps():
    assert lexical_text(_tool()).endswith("get_current_weather")
    assert parameter_items({"q": {"description": "query"}, "required": ["q"]}) == [("q", "query")]
    assert tool_text(Tool(id="x", name="x")) == "x."


def test_split_camel_equals_the_zero_width_look_behind_definition():
    """The consuming pattern must split exactly where the plain look-around definition does."""
    import re

    from hypothesis import given, settings
    from hypothesis import strategies as st

    from rated.catalog.text import split_camel

    reference = re.compile(
        r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])|(?<=[A-Za-z])(?=[0-9])|(?<=[0-9])(?=[A-Za-z])"
    )

    @settings(max_examples=500, deadline=None)
    @given(st.text(alphabet=st.sampled_from(list("aBz9Z0 _-.ÄéxY1")), max_size=40))
    def same(text: str) -> None:
        assert split_camel(text) == reference.sub(" ", text)

    same()
    assert split_camel("getHTTPResponse2xxCode") == "get HTTP Response 2 xx Code"
