"""Small package archives made in the tests (no network): wheels, npm tarballs and a seeded package cache.

Imported by the catalog tests by its unique module name (other test folders have their own conftest).
"""

from __future__ import annotations

import io
import json
import tarfile
import textwrap
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from rated.catalog.collect.fetch import Fetcher, PackageSpec

# ----------------------------------------------------------------------------------------- archive writers


def write_wheel(
    path: Path, name: str, version: str, files: Mapping[str, str], license_: str | None = "MIT"
) -> Path:
    dist = f"{name.replace('-', '_')}-{version}.dist-info"
    meta = f"Metadata-Version: 2.4\nName: {name}\nVersion: {version}\n"
    if license_:
        meta += f"License-Expression: {license_}\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as zf:
        for member, text in files.items():
            zf.writestr(member, textwrap.dedent(text))
        zf.writestr(f"{dist}/METADATA", meta + "\nlong description\n")
    return path


def write_tgz(path: Path, files: Mapping[str, str | bytes]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:gz") as tf:
        for member, content in files.items():
            data = content.encode() if isinstance(content, str) else content
            info = tarfile.TarInfo(member)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


# ----------------------------------------------------------------------------------------- source fixtures

N8N_NODES = [
    {  # an old version of the same node: ignored in favour of the newest
        "displayName": "Acme",
        "name": "acme",
        "group": ["output"],
        "version": 1,
        "description": "Consume Acme API",
        "properties": [],
    },
    {
        "displayName": "Acme",
        "name": "acme",
        "group": ["output"],
        "version": [2, 3],
        "description": "Consume Acme API",
        "credentials": [{"name": "acmeOAuth2Api", "required": True}],
        "requestDefaults": {"baseURL": "https://api.acme.io/v1"},
        "codex": {
            "categories": ["Sales"],
            "resources": {"primaryDocumentation": [{"url": "https://docs/acme"}]},
        },
        "properties": [
            {
                "displayName": "Resource",
                "name": "resource",
                "type": "options",
                "options": [{"name": "Contact", "value": "contact"}, {"name": "Deal", "value": "deal"}],
            },
            {
                "displayName": "Operation",
                "name": "operation",
                "type": "options",
                "displayOptions": {"show": {"resource": ["contact"]}},
                "options": [
                    {
                        "name": "Create",
                        "value": "create",
                        "action": "Create a contact",
                        "description": "Create a contact",
                    },
                    {"name": "Get Many", "value": "getAll", "action": "Get many contacts"},
                ],
            },
            {
                "displayName": "Operation",
                "name": "operation",
                "type": "options",
                "displayOptions": {"show": {"resource": ["deal"]}},
                "options": [
                    {
                        "name": "Delete",
                        "value": "delete",
                        "action": "Delete a deal",
                        "description": "Remove it",
                    }
                ],
            },
            {
                "displayName": "Email",
                "name": "email",
                "type": "string",
                "required": True,
                "description": "The <b>email</b> of the contact",
                "displayOptions": {"show": {"resource": ["contact"], "operation": ["create"]}},
            },
            {
                "displayName": "Limit",
                "name": "limit",
                "type": "number",
                "default": 50,
                "displayOptions": {"show": {"resource": ["contact"], "operation": ["getAll"]}},
            },
            {
                "displayName": "Old field",
                "name": "legacy",
                "type": "string",
                "displayOptions": {"show": {"@version": [1], "resource": ["contact"]}},
            },
        ],
    },
    {
        "displayName": "Self Hosted",
        "name": "selfHosted",
        "group": ["transform"],
        "version": 1,
        "description": "Talk to your own server",
        "credentials": [{"name": "selfHostedApi"}],
        "properties": [
            {
                "displayName": "Operation",
                "name": "operation",
                "type": "options",
                "options": [{"name": "Ping", "value": "ping", "action": "Ping the server"}],
            }
        ],
    },
    {
        "displayName": "Crypto",
        "name": "crypto",
        "group": ["transform"],
        "version": 1,
        "description": "Hash a value",
        "properties": [{"displayName": "Value", "name": "value", "type": "string"}],
    },
    {
        "displayName": "Acme Trigger",
        "name": "acmeTrigger",
        "group": ["trigger"],
        "version": 1,
        "properties": [],
    },
    {
        "displayName": "Old",
        "name": "old",
        "group": ["output"],
        "version": 1,
        "hidden": True,
        "properties": [],
    },
]
N8N_CREDENTIALS = [
    {"name": "oAuth2Api", "displayName": "OAuth2", "properties": []},
    {"name": "acmeOAuth2Api", "displayName": "Acme OAuth2", "extends": ["oAuth2Api"], "properties": []},
    {
        "name": "selfHostedApi",
        "displayName": "Self Hosted",
        "properties": [{"name": "apiKey", "type": "string"}],
        "test": {"request": {"baseURL": "={{$credentials.url}}/api", "url": "/ping"}},
    },
]
N8N_LICENSE = "# License\n\nPortions...\n\n## Sustainable Use License\n\nVersion 1.0\n"

LANGCHAIN_FILES = {
    "langchain_community/__init__.py": "",
    "langchain_community/tools/__init__.py": "",
    "langchain_community/tools/acme/__init__.py": "",
    "langchain_community/tools/acme/prompt.py": (
        'SEND_PROMPT = "Use this tool to send a message " + "through Acme."\n'
    ),
    "langchain_community/tools/acme/base.py": """
        from langchain_core.tools import BaseTool
        from langchain_community.utilities.acme import AcmeWrapper

        class AcmeBaseTool(BaseTool):
            api_wrapper: AcmeWrapper
        """,
    "langchain_community/tools/acme/send.py": """
        from typing import Optional, Type, List
        from pydantic import BaseModel, Field
        from langchain_community.tools.acme.base import AcmeBaseTool
        from langchain_community.tools.acme.prompt import SEND_PROMPT

        class SendSchema(BaseModel):
            \"\"\"Input.\"\"\"
            message: str = Field(..., description="The message to send.")
            to: List[str] = Field(description="Recipients.")
            cc: Optional[str] = Field(None, description="Copy to.")

        class AcmeSend(AcmeBaseTool):
            \"\"\"Send with Acme.\"\"\"
            name: str = "acme_send"
            description: str = SEND_PROMPT
            args_schema: Type[SendSchema] = SendSchema

            def _run(self, message: str, to: List[str], cc: Optional[str] = None, run_manager=None) -> str:
                return ""
        """,
    "langchain_community/tools/clock.py": """
        from langchain_core.tools import BaseTool

        class Clock(BaseTool):
            \"\"\"Tell the time.\"\"\"
            name: str = "clock"

            def _run(self, timezone: str = "UTC", run_manager=None) -> str:
                return ""

        class NotATool:
            name = "nope"
        """,
    "langchain_community/utilities/__init__.py": "",
    "langchain_community/utilities/acme.py": """
        import os
        BASE = "https://api.acme.io/v1"
        class AcmeWrapper:
            def __init__(self):
                self.key = os.environ["ACME_API_KEY"]
        """,
}

CREWAI_FILES = {
    "crewai_tools/__init__.py": "",
    "crewai_tools/tools/__init__.py": "",
    "crewai_tools/tools/acme_search_tool/acme_search_tool.py": """
        from crewai.tools import BaseTool, EnvVar
        from pydantic import BaseModel, Field

        class AcmeSearchSchema(BaseModel):
            search_query: str = Field(..., description="What to search for")

        class AcmeSearchTool(BaseTool):
            name: str = "Search with Acme"
            description: str = (
                "A tool that searches "
                "the web with Acme."
            )
            args_schema: type[BaseModel] = AcmeSearchSchema
            base_url: str = "https://search.acme.io"
            env_vars: list[EnvVar] = Field(
                default_factory=lambda: [EnvVar(name="ACME_API_KEY", description="key", required=True)]
            )
        """,
}

LLAMAINDEX_FILES = {
    "llama_index/tools/acme/__init__.py": "",
    "llama_index/tools/acme/base.py": '''
        import os
        from llama_index.core.tools.tool_spec.base import BaseToolSpec

        URL = "https://api.acme.io/v1/messages"

        class AcmeToolSpec(BaseToolSpec):
            """Acme tool spec."""

            spec_functions = [("send_message", "asend_message"), "list_channels"]

            def __init__(self, acme_token: str) -> None:
                self.token = acme_token

            def send_message(self, channel_id: str, text: str, silent: bool = False) -> None:
                """Send a message to a channel.

                Args:
                    channel_id (str): The channel to post to.
                    text (str): What to say,
                        on one or more lines.

                Returns:
                    Nothing.
                """

            def list_channels(self) -> list:
                """List the channels."""
        ''',
}
LLAMAINDEX_OTHER_FILES = {  # a second wheel whose spec subclasses the first wheel's spec
    "llama_index/tools/acme_plus/__init__.py": "",
    "llama_index/tools/acme_plus/base.py": """
        from llama_index.tools.acme.base import AcmeToolSpec

        class AcmePlusToolSpec(AcmeToolSpec):
            spec_functions = ["send_message"]
        """,
}

PUBLIC_APIS = [
    {
        "api": "Cat Facts",
        "api_link": "https://catfact.ninja/",
        "description": "Daily cat facts",
        "auth": "No",
        "https": "Yes",
        "cors": "No |",
        "id": "1",
        "category": "Animals",
    },
    {
        "api": "Acme",
        "api_link": "https://api.acme.io/docs",
        "description": "Acme <b>messaging</b> API",
        "auth": "apiKey",
        "https": "Yes",
        "cors": "Unkown |",
        "id": "2",
        "category": "Business",
    },
    {
        "api": "Dog Facts",
        "api_link": "https://dogs.example.net/",
        "description": "Dog facts",
        "auth": "OAuth",
        "https": "Yes",
        "cors": "Yes",
        "id": "3",
        "category": "Animals",
    },
    {
        "api": "Dog Facts",
        "api_link": "https://other-dogs.org/",
        "description": "More dog facts",
        "auth": "X-Mashape-Key",
        "https": "No",
        "cors": "Yes",
        "id": "4",
        "category": "Animals",
    },
]


def n8n_tgz(path: Path, nodes: object = None, credentials: object = None) -> Path:
    files: dict[str, str | bytes] = {
        "package/package.json": json.dumps(
            {"name": "n8n-nodes-base", "license": "SEE LICENSE IN LICENSE.md"}
        ),
        "package/LICENSE.md": N8N_LICENSE,
        "package/dist/nodes/Acme/Acme.node.js": "// not read",
    }
    if nodes is not False:
        files["package/dist/types/nodes.json"] = json.dumps(N8N_NODES if nodes is None else nodes)
    files["package/dist/types/credentials.json"] = json.dumps(
        N8N_CREDENTIALS if credentials is None else credentials
    )
    return write_tgz(path, files)


@pytest.fixture
def seed_cache(tmp_path: Path) -> Callable[..., Path]:  # re-exported by conftest.py
    """A package cache holding small archives for every pinned package of every source."""
    from rated.catalog.collect.build import SOURCES

    def seed(root: Path | None = None) -> Path:
        root = root or tmp_path / "cache"
        fetcher = Fetcher(root, offline=True)

        def place(spec: PackageSpec, builder: Callable[[Path], Path], filename: str) -> None:
            builder(fetcher.entry_dir(spec) / filename)

        n8n_spec = SOURCES["n8n"].packages[0]
        place(n8n_spec, n8n_tgz, f"n8n-nodes-base-{n8n_spec.version}.tgz")
        for key, files in (("langchain", LANGCHAIN_FILES), ("crewai", CREWAI_FILES)):
            spec = SOURCES[key].packages[0]
            place(
                spec, lambda p, s=spec, f=files: write_wheel(p, s.name, s.version, f), "pkg-py3-none-any.whl"
            )
        spec = SOURCES["public_apis"].packages[0]
        data = {"public_apis_mcp/datastore/index.json": json.dumps(PUBLIC_APIS)}
        place(spec, lambda p: write_wheel(p, spec.name, spec.version, data, "MIT"), "pkg-py3-none-any.whl")
        for i, spec in enumerate(SOURCES["llamaindex"].packages):
            files = LLAMAINDEX_FILES if i == 0 else LLAMAINDEX_OTHER_FILES if i == 1 else {}
            place(
                spec, lambda p, s=spec, f=files: write_wheel(p, s.name, s.version, f), "pkg-py3-none-any.whl"
            )
        return root

    return seed
