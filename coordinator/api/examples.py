"""Documented response examples, kept out of the routes so the routes read as routes (kind-neutral)."""

from __future__ import annotations

from typing import Any

REPORT_EXAMPLE: dict[str, Any] = {
    "task": {"kind": "my-kind", "name": "my-kind-b16-s0", "blocks": 16},
    "agents": 4,
    "merge_policy": "checked",
    "status": "optimal",
    "rounds": 28,
    "proposals": {
        "received": 112,
        "accepted": 112,
        "repaired": 0,
        "rebased": 0,
        "rejected": 0,
        "rejected_by_reason": {},
    },
    "objective": {
        "initial": 0.0,
        "final": -29.0588,
        "reference": -29.0588,
        "reference_kind": "optimum",
        "reference_provenance": {
            "method": "closed form -b^T A^-1 b / 2 (dense solve)",
            "proven": True,
            "seconds": 0.001,
        },
        "relative_gap": 6.6e-11,
    },
    "feasible": True,
    "wall_s": 2.4,
    "usage": {"tokens": 0, "calls": 112},
    "status_reason": "stopping rule met (relative gap)",
    "constants": {
        "kappa": 0.158,
        "gamma_min": 0.87,
        "gamma_max": 1.13,
        "delta_max": 0.0,
        "rate": 0.86,
        "floor": 0.0,
        "informative": True,
        "steps": 28,
    },
    "checks": {
        "a_priori": {
            "constants": {"mu": 0.31, "lambda": 1.52, "m": 16.0},
            "rounds_checked": 7,
            "rounds_held": 7,
            "rounds_precondition_failed": 21,
        },
        "one_step": {"coverage_target": 0.9, "rounds": 18, "hits": 17, "tightness_median": 1.4},
        "envelope": {
            "window": 3,
            "rounds": 25,
            "hits": 25,
            "tightness_median": 40.0,
            "eta_rounds_predicted": 61,
            "eta_rounds_actual": 21,
        },
    },
    "forecast": {
        "limit": -29.0588,
        "remaining": 1e-9,
        "eta_rounds": 0,
        "eta_seconds": 0.0,
        "gain_per_1k_tokens": None,
    },
    "history": [
        {
            "round": 0,
            "objective": -12.3,
            "gap": 16.7,
            "merged": 4,
            "interfering": 6,
            "kappa": 0.2,
            "gamma": 0.98,
            "delta": 0.0,
            "predicted_gap": None,
            "hit": None,
            "a_priori_rhs": None,
            "a_priori_held": None,
            "t": 0.42,
            "agent_seconds": 1.6,
        }
    ],
    "anytime": {
        "timed": True,
        "points": [[0.0, -4.2], [0.42, -12.3]],
        "horizon": 3.1,
        "reference": -29.0588,
        "reference_kind": "optimum",
        "primal_integral": 1.95,
        "primal_integral_normalized": 0.63,
        "time_to_target": [{"relative_gap": 0.01, "objective": -28.77, "seconds": None}],
        "agent_seconds": 1.6,
    },
}
