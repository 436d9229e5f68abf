"""The service validates the stored tool records in the background after start-up (``Retriever.open``
leaves each until first needed), so that its first full listing does not pay for all of them at once
under the retriever's lock; a damaged record is logged once and answered as an error only where needed."""

import logging
import sqlite3

from fastapi.testclient import TestClient

from rated import Retriever, Tool
from rated.encode.testing import HashEncoder
from rated.service import Settings, create_app


def test_records_are_parsed_in_the_background_and_a_damaged_one_is_logged(tmp_path, caplog):
    path = tmp_path / "bg.db"
    tools = [Tool(id=f"t{i}", name=f"tool_{i}", description=f"send message variant {i}") for i in range(12)]
    semantic = {"lexical": "none", "dense_weight": 1.0}  # with a lexical index, start-up needs every text
    Retriever.from_catalog(tools, db=path, encoder=HashEncoder(32), semantic=semantic).close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE tools SET record = ? WHERE id = ?", ('{"id": "broken"', "t3"))
    conn.close()
    caplog.set_level(logging.WARNING, logger="rated.service.app")
    app = create_app(Settings(db=str(path)))
    with TestClient(app) as client:
        app.state.parsing.join(timeout=30)
        assert not app.state.parsing.is_alive()
        entries = app.state.serving.current._tools
        assert [e.parsed for e in entries] == [i != 3 for i in range(12)]  # all but the damaged one
        assert "1 stored tool record(s) are damaged" in caplog.text
        assert client.get("/tools/t4").status_code == 200
        damaged = client.get("/tools/t3")  # a server-side fault, named: the rest is served
        assert damaged.status_code == 500 and damaged.json()["error"] == "IndexFormatError"
        assert "stored record of tool 't3' is invalid" in damaged.json()["detail"]


def test_a_retriever_reopened_after_a_rebuild_is_parsed_in_the_background_too(tmp_path):
    path = tmp_path / "re.db"
    tools = [Tool(id=f"t{i}", name=f"tool_{i}", description=f"send message variant {i}") for i in range(30)]
    Retriever.from_catalog(tools, db=path, encoder=HashEncoder(64)).close()
    app = create_app(Settings(db=str(path)))
    with TestClient(app) as client:
        app.state.parsing.join(timeout=30)
        first = app.state.parsing
        Retriever.from_catalog(
            tools, db=path, encoder=HashEncoder(32), overwrite=True
        ).close()  # rated index --force
        assert client.post("/retrieve", json={"query": "send message", "k": 1}).status_code == 200  # reopens
        assert app.state.parsing is not first
        app.state.parsing.join(timeout=30)
        entries = app.state.serving.current._tools
        assert app.state.serving.current.meta.encoder.dim == 32 and all(e.parsed for e in entries)
