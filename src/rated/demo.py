"""``make demo``: the main job end to end on the embedded default data (BFCL), with progress.

1. prepare the embedded encoder (all-MiniLM-L6-v2 -> ONNX, once, cached under ``$RATED_HOME``);
2. prepare the BFCL benchmark (its functions are the tool pool, its questions real labelled queries);
3. offline retrieval: every method ranks the full pool for every test query (the paper's Table 1);
4. dynamic reliability: tools go down and come back while a query stream runs (the paper's Table 2,
   on the sound protocol of docs/dynamic-benchmark.md), RATED against the baselines, each with the
   settings tuned on validation seeds that the doc reports;
5. live: a ``Retriever`` answers queries, its top tool fails, the ranking steers away, and comes back once
   the outage is over.

Outputs (JSON, PNG) go to ``runs/demo/`` (``RATED_DEMO_OUT`` overrides). Each stage is a CLI command or
public API call a user can run alone; the demo only strings them together.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.rule import Rule
from rich.table import Table

from rated.cli import main as cli
from rated.errors import RatedError

__all__ = ["main"]

console = Console()
STAGES = 5


def _stage(n: int, title: str) -> float:
    console.print(Rule(f"[bold]{n}/{STAGES}  {title}"))
    return time.perf_counter()


def _run(argv: list[str]) -> None:
    code = cli(argv)
    if code:
        raise SystemExit(f"`rated {' '.join(argv)}` failed with exit code {code}")


def _tuned_settings(config: str) -> list[str]:
    """``--set`` options with every method's settings tuned on validation seeds for ``config`` (from the
    results that docs/dynamic-benchmark.md reports), so the demo compares tuned methods; none (defaults)
    when the results file is not there, e.g. in an installed package."""
    import json

    path = Path(__file__).resolve().parents[2] / "docs" / "dynamic-benchmark" / "results.json"
    if not path.is_file():
        console.print("no tuned settings found: every method runs at its defaults")
        return []
    methods = json.loads(path.read_text())[config]["methods"]
    console.print(f"settings tuned on validation seeds: {path.name}, configuration {config}")
    return [
        item
        for name, result in methods.items()
        if name != "rated_prev"
        for param, value in result.get("params", {}).items()
        for item in ("--set", f"{name}.{param}={value}")
    ]


def _live(dataset_dir: Path) -> None:
    """Steer away from a failing tool and back, on the real pool, with a clock we can move."""
    from rated.bench.dataset import load_dataset
    from rated.bench.embcache import CachedEncoder
    from rated.encode import default_encoder
    from rated.retriever import Retriever

    ds = load_dataset(dataset_dir)
    now = [0.0]  # the retriever's clock, in seconds: moved by hand to show recovery without waiting
    encoder = CachedEncoder(default_encoder())  # the offline stage already encoded this pool
    retriever = Retriever.from_catalog(ds.tools, encoder=encoder, clock=lambda: now[0], progress=True)
    queries = [q.text for q in ds.split("test") if len(q.text) < 160][:3]

    def show(title: str, query: str, failing: str | None = None) -> str:
        table = Table(title=title, title_justify="left", show_lines=False)
        for col in ("rank", "tool", "score", "semantic", "healthy"):
            table.add_column(col)
        hits = retriever.retrieve(query, k=3)
        for i, h in enumerate(hits, 1):
            mark = " [red](down)[/]" if h.tool.id == failing else ""
            table.add_row(
                str(i),
                f"{h.tool.id}{mark}",
                f"{h.score:.3f}",
                f"{h.components.get('semantic', float('nan')):.3f}",
                "yes" if h.healthy else "[red]no[/]",
            )
        console.print(table)
        return hits[0].tool.id

    for query in queries:
        console.print(f"\n[bold]query:[/] {query}")
        top = show("before the outage", query)
        now[0] += 1.0
        retriever.feedback(top, "tool_error", query=query)
        console.print(f"[yellow]feedback:[/] {top} -> tool_error (one failure)")
        show("right after one failure", query, failing=top)
        now[0] += 3600.0
        console.print("[green]... an hour later, no news about that tool ...[/]")
        show("after the outage (evidence has faded: the tool is tried again)", query)
    retriever.close()


def main() -> int:
    out = Path(os.environ.get("RATED_DEMO_OUT", "runs/demo"))
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    try:
        t = _stage(1, "embedded encoder (all-MiniLM-L6-v2, ONNX graph on the CPU)")
        from rated.encode import default_encoder

        enc = default_encoder(progress=True)
        ready = f"{enc.name} (dim {enc.dim}, run by {enc.backend})"
        console.print(f"encoder ready: {ready} in {time.perf_counter() - t:.1f}s")

        t = _stage(2, "BFCL benchmark (real function-calling queries and their tools)")
        data = out / "bfcl"
        if not (data / "queries.jsonl").is_file():
            _run(["data", "prepare", "bfcl", "--out", str(data)])
        else:
            console.print(f"using {data}")

        t = _stage(3, "offline retrieval on the BFCL test split (Table 1)")
        _run(["bench", "offline", "--dataset", str(data), "--out", str(out / "offline.json")])

        t = _stage(4, "dynamic reliability: outages while a query stream runs (Table 2)")
        _run(
            [
                "bench", "dynamic", "--dataset", str(data), "--scenario", "outages", "--seeds", "3",
                "--out", str(out / "dynamic_outages.json"), *_tuned_settings("bfcl-outages-0.2"),
            ]
        )  # fmt: skip

        _stage(5, "live: a failing tool is avoided after one failure, and tried again later")
        _live(data)
    except RatedError as exc:
        console.print(f"[bold red]error:[/] {exc}")
        return 1
    console.print(Rule(f"done in {time.perf_counter() - started:.0f}s; results in {out}/"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
