"""HTTP stack of the service: uvicorn with h11 + asyncio against httptools + uvloop (``uvicorn[standard]``).

One run, side by side: for each stack, the trivial FastAPI endpoint (benchmarks/service_trivial_app.py) and
the coordinator (``blockopt serve --http ... --loop ...``, 64 simulated agents on quadratic-64, checked merging,
one request per proposal as `blockopt agent` does), each one server process. Prints proposals/s, the ratio to
the trivial endpoint of the same stack, and server CPU per proposal. With ``--profile DIR`` a py-spy profile of
each coordinator is recorded and summarised per step of a proposal's request.

    .venv/bin/python benchmarks/service_http_stack.py [--agents 64] [--seconds 10] [--profile out/http-prof]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import service_steps  # noqa: E402
from service_throughput import ROOT, create_task, free_port, load, start_serve, start_trivial, stop  # noqa: E402

STACKS = {"h11+asyncio": ("h11", "asyncio"), "httptools+uvloop": ("httptools", "uvloop")}

STEPS: list[tuple[str, tuple[str, ...]]] = [
    # (step, substrings of a frame that put a sample in it); the innermost frame that matches decides
    (
        "round engine (scoring, selection)",
        ("coordinator/engine/rounds.py", "coordinator/engine/selection.py", "tasks/"),
    ),
    (
        "round bookkeeping (ledger, records, metrics)",
        (
            "coordinator/reports/ledger.py",
            "coordinator/engine/convergence.py",
            "coordinator/runtime/metrics.py",
            "prometheus_client",
        ),
    ),
    ("store (memory)", ("coordinator/store/",)),
    ("auth", ("authenticate", "coordinator/runtime/auth.py")),
    ("request validation (pydantic)", ("pydantic", "fastapi/dependencies", "_request_body")),
    (
        "response encoding",
        ("jsonable_encoder", "model_response", "serialize_response", "json/encoder", "fastapi/encoders"),
    ),
    ("HTTP parsing and protocol", ("h11", "httptools", "uvicorn/protocols")),
    ("routing and middleware (starlette/fastapi)", ("starlette", "fastapi")),
    ("event loop", ("asyncio", "uvloop", "selectors")),
]


def steps_of(profile: Path) -> dict[str, float]:
    """Share of the samples per step of this script's ``STEPS`` (``service_steps.steps_of``)."""
    return service_steps.steps_of(profile, STEPS)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--agents", type=int, default=64)
    ap.add_argument("--blocks", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--gen-procs", type=int, default=2)
    ap.add_argument("--profile", type=Path, help="record py-spy profiles of the coordinators here")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "service-http-stack.json")
    args = ap.parse_args()
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
    rows: dict[str, dict[str, Any]] = {}
    for name, (http, loop) in STACKS.items():
        port = free_port()
        trivial = start_trivial(port, "--http", http, "--loop", loop)
        try:
            rows[f"trivial {name}"] = load(
                "trivial", port, None, args.agents, args.gen_procs, args.seconds, trivial.pid
            )
        finally:
            stop(trivial)
        port = free_port()
        serve = start_serve(port, "--http", http, "--loop", loop)
        prof = str(args.profile / f"coordinator-{name}.txt") if args.profile else None
        try:
            task = create_task(port, "rounds", "checked", args.blocks)
            rows[f"coordinator {name}"] = load(
                "coordinator",
                port,
                task,
                args.agents,
                args.gen_procs,
                args.seconds,
                serve.pid,
                5.0,
                profile=prof,
                chain=True,
            )
        finally:
            stop(serve)
        if prof and Path(prof).exists():
            rows[f"coordinator {name}"]["steps"] = steps_of(Path(prof))
    print(
        f"{args.agents} agents, quadratic n={args.blocks}, checked, one request per proposal; {args.seconds:.0f} s "
        "per case; one server process per case; shared, loaded machine"
    )
    print(f"{'case':32s} {'proposals/s':>11s} {'p50 ms':>7s} {'p99 ms':>7s} {'server us/req':>13s}")
    for case, r in rows.items():
        print(
            f"{case:32s} {r['proposals_per_s']:11.1f} {r['p50_ms']:7.2f} {r['p99_ms']:7.2f} "
            f"{r['server_us_per_request']:13.0f}"
        )
    summary: dict[str, Any] = {}
    for name in STACKS:
        coord, triv = rows[f"coordinator {name}"], rows[f"trivial {name}"]
        summary[name] = {
            "ratio_to_trivial": coord["proposals_per_s"] / triv["requests_per_s"],
            "cpu_per_proposal_vs_trivial": coord["server_us_per_request"] / triv["server_us_per_request"],
        }
        print(
            f"{name}: coordinator proposals/s / trivial requests/s = {summary[name]['ratio_to_trivial']:.2f}; "
            f"server CPU per request = {summary[name]['cpu_per_proposal_vs_trivial']:.2f}x trivial"
        )
    a, b = (rows[f"coordinator {n}"] for n in STACKS)
    print(
        f"coordinator httptools+uvloop / h11+asyncio: proposals/s {b['proposals_per_s'] / a['proposals_per_s']:.2f}x, "
        f"server CPU per request {b['server_us_per_request'] / a['server_us_per_request']:.2f}x"
    )
    for name in STACKS:
        steps = rows[f"coordinator {name}"].get("steps")
        if steps:
            print(
                f"server CPU by step, {name}: " + "; ".join(f"{k} {100 * v:.0f}%" for k, v in steps.items())
            )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "agents": args.agents,
                "blocks": args.blocks,
                "seconds": args.seconds,
                "rows": {k: {kk: vv for kk, vv in v.items()} for k, v in rows.items()},
                "summary": summary,
            },
            indent=1,
        )
    )
    print(f"wrote {args.out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
