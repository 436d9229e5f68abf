"""Every collector's parser on small archives made here: fields, ids, auth, endpoints, layout errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from catalog_fixtures import (
    CREWAI_FILES,
    LANGCHAIN_FILES,
    LLAMAINDEX_FILES,
    LLAMAINDEX_OTHER_FILES,
    PUBLIC_APIS,
    n8n_tgz,
    write_wheel,
)

from rated.catalog.collect import crewai, langchain, llamaindex, n8n, public_apis
from rated.catalog.collect.archive import Archive, LayoutError
from rated.catalog.collect.fetch import PackageSpec
from rated.catalog.schema import AuthType


def _wheel(tmp_path: Path, spec: PackageSpec, files: dict, license_: str | None = "MIT") -> Archive:
    return Archive(write_wheel(tmp_path / f"{spec.name}.whl", spec.name, spec.version, files, license_), spec)


def test_n8n_resource_operation_tools(tmp_path: Path) -> None:
    archive = Archive(n8n_tgz(tmp_path / "n.tgz"), n8n.PACKAGE, want=n8n.SOURCE.want)
    tools = {t.id: t for t in n8n.parse([archive])}
    assert sorted(tools) == [
        "n8n:acme.contact.create",
        "n8n:acme.contact.get_all",
        "n8n:acme.deal.delete",
        "n8n:crypto",
        "n8n:self_hosted.ping",
    ]  # trigger and hidden nodes skipped, old version ignored
    create = tools["n8n:acme.contact.create"]
    assert create.name == "acme_contact_create"
    assert create.description == "Create a contact in Acme."
    assert create.parameters == {
        "type": "object",
        "properties": {"email": {"type": "string", "description": "The email of the contact"}},
        "required": ["email"],
    }
    assert tools["n8n:acme.contact.get_all"].parameters["properties"] == {
        "limit": {"type": "number", "description": "Limit", "default": 50}
    }
    assert tools["n8n:acme.deal.delete"].description == "Delete a deal in Acme. Remove it."
    assert create.auth.type is AuthType.OAUTH2 and create.auth.credential == "acmeOAuth2Api"
    assert create.endpoint == "https://api.acme.io/v1" and create.provider == "acme.io"
    assert create.tags == ("Sales", "Contact")
    assert create.provenance.license == "Sustainable Use License"
    assert create.extra["docs"] == "https://docs/acme"
    hosted = tools["n8n:self_hosted.ping"]
    assert hosted.endpoint is None and hosted.extra["endpoint_template"] == "{url}/api"
    assert hosted.auth.type is AuthType.API_KEY
    crypto = tools["n8n:crypto"]
    assert crypto.auth.type is AuthType.NONE and "value" in crypto.parameters["properties"]


def test_n8n_changed_layout_is_a_clear_error(tmp_path: Path) -> None:
    archive = Archive(n8n_tgz(tmp_path / "n.tgz", nodes=False), n8n.PACKAGE, want=n8n.SOURCE.want)
    with pytest.raises(LayoutError, match="nodes.json is missing"):
        n8n.parse([archive])
    archive = Archive(n8n_tgz(tmp_path / "m.tgz", nodes={"not": "a list"}), n8n.PACKAGE, want=n8n.SOURCE.want)
    with pytest.raises(LayoutError, match="not JSON lists"):
        n8n.parse([archive])


def test_langchain_classes_read_from_source(tmp_path: Path) -> None:
    tools = {t.id: t for t in langchain.parse([_wheel(tmp_path, langchain.PACKAGE, LANGCHAIN_FILES)])}
    assert sorted(tools) == ["langchain:acme_send", "langchain:clock"]
    send = tools["langchain:acme_send"]
    assert send.description == "Use this tool to send a message through Acme."  # constant from prompt.py
    assert send.parameters["required"] == ["message", "to"]
    assert send.parameters["properties"]["to"] == {
        "type": "array",
        "items": {"type": "string"},
        "description": "Recipients.",
    }
    assert send.parameters["properties"]["cc"]["type"] == "string"
    # credential and endpoint come from the wrapper module the base class holds
    assert send.auth.type is AuthType.API_KEY and send.auth.credential == "ACME_API_KEY"
    assert send.endpoint == "https://api.acme.io/v1" and send.provider == "acme.io"
    assert send.tags == ("acme",) and send.provenance.path == "langchain_community/tools/acme/send.py"
    clock = tools["langchain:clock"]
    assert clock.description == "Tell the time."  # docstring when no description attribute
    assert clock.parameters == {
        "type": "object",
        "properties": {"timezone": {"type": "string", "default": "UTC"}},
    }
    assert clock.auth.type is AuthType.UNKNOWN


def test_langchain_without_tools_dir_fails(tmp_path: Path) -> None:
    with pytest.raises(LayoutError, match="no langchain_community/tools/"):
        langchain.parse([_wheel(tmp_path, langchain.PACKAGE, {"langchain_community/x.py": ""})])


def test_crewai_env_vars_and_base_url(tmp_path: Path) -> None:
    (tool,) = crewai.parse([_wheel(tmp_path, crewai.PACKAGE, CREWAI_FILES, license_=None)])
    assert tool.id == "crewai:search_with_acme" and tool.name == "Search with Acme"
    assert tool.description == "A tool that searches the web with Acme."
    assert tool.parameters["properties"]["search_query"]["description"] == "What to search for"
    assert tool.auth.credential == "ACME_API_KEY" and tool.endpoint == "https://search.acme.io"
    assert tool.extra["integration"] == "acmesearch"
    assert tool.provenance.license is None


def test_llamaindex_spec_functions_across_wheels(tmp_path: Path) -> None:
    specs = llamaindex.PACKAGES[:2]
    archives = [
        _wheel(tmp_path, specs[0], LLAMAINDEX_FILES),
        _wheel(tmp_path, specs[1], LLAMAINDEX_OTHER_FILES),
    ]
    tools = {t.id: t for t in llamaindex.parse(archives)}
    assert sorted(tools) == [
        "llamaindex:acme.list_channels",
        "llamaindex:acme.send_message",
        "llamaindex:acme_plus.send_message",
    ]
    send = tools["llamaindex:acme.send_message"]
    assert send.description == "Send a message to a channel."
    assert send.parameters["properties"]["text"]["description"] == "What to say, on one or more lines."
    assert send.parameters["required"] == ["channel_id", "text"]
    assert send.parameters["properties"]["silent"] == {"type": "boolean", "default": False}
    assert send.auth.type is AuthType.API_KEY and send.auth.credential == "acme_token"
    assert send.endpoint == "https://api.acme.io/v1/messages"
    plus = tools["llamaindex:acme_plus.send_message"]  # its base class lives in the other wheel
    assert plus.provenance.package == specs[1].name and plus.description == send.description


def test_public_apis_rows(tmp_path: Path) -> None:
    data = {public_apis.DATA_PATH: json.dumps(PUBLIC_APIS)}
    tools = {t.id: t for t in public_apis.parse([_wheel(tmp_path, public_apis.PACKAGE, data)])}
    assert sorted(tools) == [
        "public_apis:acme",
        "public_apis:cat_facts",
        "public_apis:dog_facts~animals_dogs_example_net",
        "public_apis:dog_facts~animals_other_dogs_org",
    ]
    acme = tools["public_apis:acme"]
    assert acme.description == "Acme messaging API" and acme.auth.type is AuthType.API_KEY
    assert acme.extra["cors"] == "unknown" and acme.tags == ("Business",) and acme.provider == "acme.io"
    assert tools["public_apis:cat_facts"].auth.type is AuthType.NONE
    assert tools["public_apis:cat_facts"].extra["cors"] == "no"
    assert tools["public_apis:dog_facts~animals_dogs_example_net"].auth.type is AuthType.OAUTH2
    mashape = tools["public_apis:dog_facts~animals_other_dogs_org"].auth
    assert mashape.type is AuthType.API_KEY and mashape.credential == "X-Mashape-Key"
    # ids do not depend on the list order
    again = public_apis.parse(
        [_wheel(tmp_path / "r", public_apis.PACKAGE, {public_apis.DATA_PATH: json.dumps(PUBLIC_APIS[::-1])})]
    )
    assert sorted(t.id for t in again) == sorted(tools)


def test_public_apis_layout_change(tmp_path: Path) -> None:
    with pytest.raises(LayoutError, match="index.json is missing"):
        public_apis.parse([_wheel(tmp_path, public_apis.PACKAGE, {"x.py": ""})])
    bad = {public_apis.DATA_PATH: json.dumps([{"name": "x"}] * 5)}
    with pytest.raises(LayoutError, match="lack"):
        public_apis.parse([_wheel(tmp_path / "b", public_apis.PACKAGE, bad)])
