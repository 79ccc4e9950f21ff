"""The run report says how its reference was obtained (solver, workers, seed, time limit, proven or not),
so a run can be reproduced and two runs compared: the same plan ended ``optimal`` on one machine and
``stalled`` on another when a plugin's CP-SAT reference used the machine's core count."""

from __future__ import annotations

from typing import Any

from tasks import create_task
from tasks.base import Reference
from tests.conftest import Coordinator


def test_the_quadratic_reference_is_its_closed_form_proven() -> None:
    ref = create_task("quadratic", {"blocks": 3, "dim": 2}).reference()
    assert ref.provenance() == {"method": "closed form -b^T A^-1 b / 2 (dense solve)", "proven": True}


def test_a_routing_optimum_names_cp_sat_with_its_fixed_workers_seed_and_limit() -> None:
    ref = create_task(
        "routing", {"map": "empty-8-8", "robots": 8, "blocks": 2, "exact_limit": 20}
    ).reference()
    assert ref.kind == "optimum"
    p = ref.provenance()
    assert p["solver"].startswith("ortools CP-SAT ") and p["workers"] == 2 and p["seed"] == 1
    assert p["time_limit"] == 20 and p["proven"] is True


def test_a_routing_lower_bound_says_it_is_the_shortest_paths() -> None:
    ref = create_task("routing", {"map": "empty-8-8", "robots": 6, "blocks": 2, "exact_limit": 0}).reference()
    assert ref == Reference(ref.value, "lower_bound", method="sum of individual shortest paths", proven=True)


def test_sqlplan_and_jobshop_say_how_theirs_were_obtained() -> None:
    sql = create_task("sqlplan", {}).reference()
    assert sql.kind == "lower_bound" and sql.proven is True and sql.method
    shop = create_task("jobshop", {"instance": "ft06", "exact_limit": 10}).reference()
    assert (shop.value, shop.kind) == (55.0, "optimum")
    p = shop.provenance()
    assert p["solver"].startswith("ortools CP-SAT ") and (p["workers"], p["seed"]) == (1, 1)
    assert p["time_limit"] == 10 and p["proven"] is True


def report_of(coordinator: Coordinator, **body: Any) -> dict[str, Any]:
    task = coordinator.create_task(**body)
    coordinator.wait_for(task["id"], lambda v: v["status"] != "preparing")
    r = coordinator.admin.get(f"/v1/tasks/{task['id']}/report")
    assert r.status_code == 200, r.text
    objective: dict[str, Any] = r.json()["objective"]
    return objective


def test_the_service_report_records_the_references_provenance(coordinator: Coordinator) -> None:
    objective = report_of(coordinator, kind="jobshop", params={"instance": "ft06", "exact_limit": 10})
    assert objective["reference"] == 55.0 and objective["reference_kind"] == "optimum"
    p = objective["reference_provenance"]
    assert p["solver"].startswith("ortools CP-SAT ")
    assert {k: p[k] for k in ("workers", "seed", "time_limit", "proven")} == {
        "workers": 1,
        "seed": 1,
        "time_limit": 10.0,
        "proven": True,
    }
    quad = report_of(coordinator, params={"blocks": 2, "dim": 2})
    assert quad["reference_provenance"]["proven"] is True


def test_the_in_process_report_records_it_too(tmp_path: Any) -> None:
    """``blockopt run --inproc --report`` (the engine-only path) writes the same field."""
    import json
    import subprocess
    import sys

    out = tmp_path / "report.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "blockopt",
            "run",
            "quadratic",
            "--blocks",
            "2",
            "--dim",
            "2",
            "--inproc",
            "--quiet",
            "--report",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    assert report["objective"]["reference_provenance"]["method"].startswith("closed form")
    assert report["objective"]["reference_provenance"]["seconds"] >= 0  # before the run's clock started
