"""``blockopt compare REPORT.json ...``: time-to-target speed-ups from run reports' anytime curves.

For a target objective Q (by default the objective the first report reached at its end), each report's
T_i(Q) is the first time its curve reached Q, and its speed-up over the first report is
S_i = T_ref(Q) / T_i(Q) (above 1: it got there sooner). The primal integral of each run is computed
against one common reference (the best objective any of them reached, or the task's proven optimum), so
the column compares like with like.

With ``goal`` the reports are samples: those with the first report's team size are the reference, and each
other team size's runs are read against it as a whole (``blockopt.samples``): "S >= goal" above, below or
undecided, from every pairing of a reference run with one of theirs. Q then defaults to the upper median
of the reference runs' final objectives, a value at least half of them reached.

With ``at`` (seconds), each other team size's pace at those marks (``blockopt.pace``): the reference runs'
time to the objective those runs had then, so the reading says where along the run a team gains its
speed-up, not only at Q.
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from blockopt.pace import PacedRun, Trace, between, pace, reading
from blockopt.samples import TimedRun, pairings
from coordinator.reports.anytime import Point, best_so_far, curve, primal_integral, time_to_target


class CompareError(Exception):
    """A report that cannot be compared (missing, not a report, no time data): one line for the user."""


@dataclass(frozen=True)
class RunCurve:
    path: str
    agents: int | None
    final: float
    horizon: float
    points: list[Point]
    reference: float
    reference_kind: str


def load_run(path: Path) -> RunCurve:
    """One report's anytime curve; ``CompareError`` says why a file is not one."""
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise CompareError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CompareError(f"{path}: not a JSON report ({type(exc).__name__})") from None
    if not isinstance(data, dict) or not isinstance(data.get("objective"), dict) or "history" not in data:
        raise CompareError(f"{path}: not a blockopt report (no objective and history)")
    try:
        objective = data["objective"]
        initial, final = float(objective["initial"]), float(objective["final"])
        history = data["history"]
        anytime = data.get("anytime") or {}
        timed = bool(anytime.get("timed")) or any(row.get("t") is not None for row in history)
        points = [(float(t), float(f)) for t, f in anytime["points"]] if anytime else curve(history, initial)
        reference, kind = float(objective["reference"]), str(objective["reference_kind"])
        horizon = float(data.get("wall_s") or 0.0)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CompareError(f"{path}: not a blockopt report ({type(exc).__name__}: {exc})") from None
    if not timed:
        raise CompareError(f"{path}: no time data (written before history rows carried times; run it again)")
    agents = data.get("agents")
    return RunCurve(
        str(path),
        agents if isinstance(agents, int) else None,
        final,
        horizon,
        best_so_far(points),
        reference,
        kind,
    )


def speed_up(t_ref: float | None, t: float | None) -> float | None:
    """T_ref / T (None when either never reached the target; inf when this run started at it)."""
    if t_ref is None or t is None:
        return None
    if t == 0.0:
        return 1.0 if t_ref == 0.0 else math.inf
    return t_ref / t


def compare(
    paths: list[Path], target: float | None = None, goal: float | None = None, at: list[float] | None = None
) -> dict[str, Any]:
    """The comparison of ``paths`` against the first one, at ``target`` (default: its final objective, or
    with ``goal`` the upper median of the reference team size's finals), with each other team size's pace
    at the ``at`` marks."""
    runs = [load_run(p) for p in paths]
    reference = [r for r in runs if r.agents == runs[0].agents]
    if target is not None:
        q = target
    elif goal is not None:
        q = statistics.median_high(r.final for r in reference)
    else:
        q = runs[0].final
    optimum = [r.reference for r in runs if r.reference_kind == "optimum"]
    common = min(optimum) if optimum else min(r.final for r in runs)
    t_ref = time_to_target(runs[0].points, q)
    rows = []
    for run in runs:
        t = time_to_target(run.points, q)
        integral = primal_integral(run.points, common, run.horizon)
        rows.append(
            {
                "report": run.path,
                "agents": run.agents,
                "final": run.final,
                "wall_s": run.horizon,
                "time_to_target": t,
                "speed_up": speed_up(t_ref, t),
                "primal_integral": integral,
                "primal_integral_normalized": integral / run.horizon if run.horizon > 0 else None,
            }
        )
    result: dict[str, Any] = {"target": q, "integral_reference": common, "runs": rows}
    if goal is not None:
        result["samples"] = samples(runs, reference, q, goal)
    if at:
        result["pace"] = paces(runs, reference, at)
    return result


def paces(runs: list[RunCurve], reference: list[RunCurve], at: list[float]) -> list[dict[str, Any]]:
    """Per other team size, its pace at each mark against the reference runs (``blockopt.pace``)."""

    def trace(run: RunCurve) -> Trace:
        # a run ran at least until its last merge: reports written before ``ledger.run_seconds`` could time
        # their last merge after their wall_s
        return Trace(run.points, max(run.horizon, run.points[-1][0] if run.points else 0.0))

    out = []
    for agents in dict.fromkeys(r.agents for r in runs if r.agents != reference[0].agents):
        theirs = [PacedRun(trace(r), [trace(ref) for ref in reference]) for r in runs if r.agents == agents]
        got = [pace(theirs, t) for t in at]
        out.append(
            {
                "agents": agents,
                "runs": len(theirs),
                "at": at,
                "reference_seconds": [None if math.isinf(p.low) else p.low for p in got],
                "bound": [not p.known for p in got],
                "between": between(got),
                "reading": reading(got),
            }
        )
    return out


def samples(runs: list[RunCurve], reference: list[RunCurve], q: float, goal: float) -> list[dict[str, Any]]:
    """Per other team size, its runs against the reference runs at speed-up ``goal``."""

    def sample(rs: list[RunCurve]) -> list[TimedRun]:
        return [TimedRun(time_to_target(r.points, q), r.horizon) for r in rs]

    out = []
    for agents in dict.fromkeys(r.agents for r in runs if r.agents != reference[0].agents):
        theirs = [r for r in runs if r.agents == agents]
        read = pairings(sample(reference), sample(theirs), goal)
        out.append(
            {
                "agents": agents,
                "runs": len(theirs),
                "reference_runs": len(reference),
                "goal": goal,
                "share_low": read.low,
                "share_high": read.high,
                "p_above": read.p_above,
                "p_below": read.p_below,
                "verdict": read.verdict,
                "reading": str(read),
            }
        )
    return out


def table(result: dict[str, Any]) -> list[str]:
    """The comparison as aligned text lines."""

    def num(v: float | None, fmt: str) -> str:
        return "-" if v is None else ("inf" if math.isinf(v) else format(v, fmt))

    lines = [
        f"target Q = {result['target']:.10g} (speed-up S = T_ref(Q) / T(Q), ref = the first report);"
        f" primal integral against {result['integral_reference']:.10g}",
        f"{'report':<40s} {'agents':>6s} {'final':>14s} {'wall s':>8s} {'T(Q) s':>9s} {'S':>7s} {'PI/T':>7s}",
    ]
    for row in result["runs"]:
        name = row["report"] if len(row["report"]) <= 40 else "..." + row["report"][-37:]
        lines.append(
            f"{name:<40s} {num(row['agents'], 'd'):>6s} {row['final']:>14.10g} {row['wall_s']:>8.2f} "
            f"{num(row['time_to_target'], '.3f'):>9s} {num(row['speed_up'], '.3g'):>7s} "
            f"{num(row['primal_integral_normalized'], '.4f'):>7s}"
        )
    ref = result["runs"][0]["agents"]
    for read in result.get("samples", []):
        lines.append(
            f"{num(read['agents'], 'd')} agents ({read['runs']} runs) against {num(ref, 'd')} "
            f"({read['reference_runs']} runs): {read['reading']}"
        )
    for read in result.get("pace", []):
        lines.append(
            f"{num(read['agents'], 'd')} agents ({read['runs']} runs), the reference's time to their"
            f" objective {read['reading']}"
        )
    return lines
