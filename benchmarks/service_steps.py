"""Where a server's CPU goes per proposal, step by step, from the py-spy profiles of a throughput run.

``benchmarks/service_throughput.py --profile DIR --json FILE`` records one py-spy profile (``--gil``, raw
folded stacks) per server and each server's CPU seconds and proposals. This sorts each profile's samples into
the steps of a proposal's request (the innermost frame that matches a step decides) and turns the shares into
CPU microseconds per proposal (per request for the trivial endpoint): share × server CPU ÷ proposals.
It covers the in-process memory store, where the round engine runs in the serving process (a worker
thread).

    .venv/bin/python benchmarks/service_steps.py --run FILE --profiles DIR [--json OUT]
    .venv/bin/python benchmarks/service_steps.py --run AFTER.json --profiles DIR_AFTER \
        --before BEFORE.json --before-profiles DIR_BEFORE       # the two side by side, per case
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

STEPS: list[tuple[str, tuple[str, ...]]] = [
    # (step, substrings of a frame that put a sample in it); the innermost frame that matches decides
    ("engine: objective and interactions (task)", ("tasks/",)),
    ("engine: selection (enumeration, CP-SAT)", ("coordinator/engine/selection.py", "ortools")),
    (
        "engine: interference graph",
        ("coordinator/engine/interference.py", "networkx", "_interference_graph"),
    ),
    ("engine: other (admission, records, constants)", ("coordinator/engine/",)),
    (
        "round bookkeeping (ledger, metrics)",
        ("coordinator/reports/", "coordinator/runtime/metrics.py", "prometheus_client"),
    ),
    (
        "round runner (queue state, commit)",
        ("coordinator/runtime/rounds.py", "coordinator/runtime/window.py"),
    ),
    ("store (memory)", ("coordinator/store/",)),
    ("auth and rate limit", ("authenticate", "coordinator/runtime/auth.py", "current_agent")),
    (
        "next lease (contract)",
        ("contract_envelope", "coordinator/runtime/leases.py", "with_next_lease"),
    ),
    ("long-poll wait and wake", ("Proposing.proposal (", "Proposing._wait (", "wake (", "changed (")),
    ("submit and budgets", ("coordinator/runtime/", "coordinator/api/routes/")),
    (
        "request parsing and validation",
        (
            "fastapi/dependencies",
            "fastapi/_compat",
            "_request_body",
            "json/decoder",
            "validate_json",
            "validate_python",
            "Request.json (",
            "Request.body (",
            "_proposal (coordinator/api/hot.py",
        ),
    ),
    (
        "response encoding",
        ("model_response", "_send_model (", "serialize_response", "json/encoder", "fastapi/encoders"),
    ),
    ("socket write (uvicorn send)", ("RequestResponseCycle.send (",)),
    ("HTTP parsing and protocol", ("h11", "httptools", "uvicorn/protocols")),
    ("routing and middleware (starlette/fastapi)", ("starlette", "fastapi", "coordinator/api/")),
    ("event loop and threads", ("asyncio", "uvloop", "selectors", "threading", "concurrent/futures")),
]
"""A pydantic frame alone decides nothing: a model built or copied counts for the step that asked for it."""


def steps_of(profile: Path, steps: list[tuple[str, tuple[str, ...]]] | None = None) -> dict[str, float]:
    """Share of the samples per step (py-spy raw folded stacks: 'frame;frame;... count'); ``steps``: another
    list of (step, frame substrings) than ``STEPS`` (the split mode's scripts sort into their own)."""
    steps = STEPS if steps is None else steps
    counts: Counter[str] = Counter()
    total = 0
    for line in profile.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not n.isdigit():
            continue
        total += int(n)
        step = "other"
        for frame in reversed(stack.split(";")):
            found = next((name for name, keys in steps if any(k in frame for k in keys)), None)
            if found:
                step = found
                break
        counts[step] += int(n)
    return {k: v / max(1, total) for k, v in counts.most_common()}


def profile_name(row: str) -> str:
    """The profile file service_throughput.py wrote for a row ('coordinator rounds/checked/next' ->
    'rounds-checked-next.txt'; '... [after #2]' -> '...-after-2.txt')."""
    if row == "trivial POST":
        return "trivial.txt"
    case = row.removeprefix("coordinator ")
    tagged = re.fullmatch(r"(\S+) \[(before|after)(?: #(\d+))?\]", case)
    if tagged:
        case = f"{tagged[1]}-{tagged[2]}-{tagged[3] or 1}"
    return case.replace("/", "-") + ".txt"


def _column(row: dict[str, Any], prof: Path) -> dict[str, Any]:
    us = 1e6 * row["server_cpu_s"] / max(1, row["proposals"])
    return {
        "us_per_proposal": us,
        "proposals_per_s": row["proposals_per_s"],
        "steps": {k: v * us for k, v in steps_of(prof).items()},
    }


def _median(columns: list[dict[str, Any]]) -> dict[str, Any]:
    """Per step, the median over a case's pairs (``--pairs``: each pair has its own profile)."""
    steps = {s for c in columns for s in c["steps"]}
    return {
        "us_per_proposal": statistics.median(c["us_per_proposal"] for c in columns),
        "proposals_per_s": statistics.median(c["proposals_per_s"] for c in columns),
        "steps": {s: statistics.median(c["steps"].get(s, 0.0) for c in columns) for s in steps},
    }


def per_proposal(run: Path, profiles: Path) -> dict[str, dict[str, Any]]:
    """For each row of a run: CPU µs per proposal, split by step (``--pairs`` runs: medians over the pairs,
    the trivial endpoint's pairs of each case apart)."""
    data = json.loads(run.read_text())
    out: dict[str, dict[str, Any]] = {}
    for name, row in data.get("rows", {}).items():
        prof = profiles / profile_name(name)
        if prof.exists():
            out[name] = _column(row, prof)
    for case, found in data.get("cases", {}).items():
        tag = case.replace("/", "-")
        for role, label in (
            ("trivial", f"trivial [{case.split('/')[1]}]"),
            ("coordinator", f"coordinator {case}"),
        ):
            columns = [
                _column(pair[role], profiles / f"{role}-{tag}-{k + 1}.txt")
                for k, pair in enumerate(found["pairs"])
                if (profiles / f"{role}-{tag}-{k + 1}.txt").exists()
            ]
            if columns:
                out[label] = _median(columns)
    return out


def table(columns: dict[str, dict[str, Any]]) -> str:
    names = list(columns)
    steps = sorted(
        {s for c in columns.values() for s in c["steps"]},
        key=lambda s: -max(c["steps"].get(s, 0.0) for c in columns.values()),
    )
    width = max(14, *(len(n) for n in names))
    lines = [
        f"{'CPU us per proposal (trivial: per request)':46s} " + " ".join(f"{n:>{width}s}" for n in names)
    ]
    for s in steps:
        lines.append(f"{s:46s} " + " ".join(f"{c['steps'].get(s, 0.0):{width}.0f}" for c in columns.values()))
    lines.append(f"{'total':46s} " + " ".join(f"{c['us_per_proposal']:{width}.0f}" for c in columns.values()))
    lines.append(
        f"{'proposals/s':46s} " + " ".join(f"{c['proposals_per_s']:{width}.1f}" for c in columns.values())
    )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", type=Path, required=True, help="service_throughput.py --json output")
    ap.add_argument("--profiles", type=Path, required=True, help="its --profile directory")
    ap.add_argument("--before", type=Path, help="another run's JSON, shown beside (same cases)")
    ap.add_argument("--before-profiles", type=Path)
    ap.add_argument("--json", type=Path, help="write the per-step figures here")
    args = ap.parse_args()
    after = per_proposal(args.run, args.profiles)
    before = per_proposal(args.before, args.before_profiles) if args.before and args.before_profiles else {}
    columns: dict[str, dict[str, Any]] = {}
    for name, col in after.items():
        short = name.removeprefix("coordinator rounds/").removeprefix("coordinator ")
        if name in before:
            columns[f"{short} (before)"] = before[name]
            columns[f"{short} (after)"] = col
        else:
            columns[short] = col
    print(table(columns))
    if args.json:
        args.json.write_text(
            json.dumps(
                {"argv": vars(args) | {"run": str(args.run)}, "columns": columns}, indent=1, default=str
            )
        )


if __name__ == "__main__":
    main()
