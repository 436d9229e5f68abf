"""``rated bench latency`` prints the retriever's own ranking path beside the public API's (the JSON's
``live_added_median_ms``), so the figure that ``Retriever.retrieve`` pays is on screen, not only in the
file."""

from __future__ import annotations

import json

from rated.bench.dataset import save_dataset
from rated.bench.dynamic.toy import toy_dataset
from rated.cli import main


def test_the_table_has_the_retriever_path_column(tmp_path, capsys):
    data = save_dataset(toy_dataset(), tmp_path / "toy")
    out = tmp_path / "lat.json"
    argv = [
        "bench",
        "latency",
        "--dataset",
        str(data),
        "--encoder",
        "hash",
        "--queries",
        "6",
        "--warmup",
        "2",
    ]
    assert main([*argv, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    rows = {line.split("|")[1].strip(): line for line in printed.splitlines() if line.startswith("| ")}
    assert "retriever path" in rows["stage"]
    methods = json.loads(out.read_text())["methods"]
    live = methods["rated"]["live_added_median_ms"]
    assert rows["rated"].rstrip(" |").endswith(f"{live:.4f}")
    assert rows["encode_only"].rstrip(" |").endswith("-")  # no re-ranking: nothing added
