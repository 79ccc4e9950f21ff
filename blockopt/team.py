"""What ``blockopt run`` tells a user about the team it was given against the blocks the kind can lease.

A block is leased to one agent at a time, so a team larger than the task's block count works at most that
many at once; the others wait for a free block (the coordinator answers 429 ``no_block_available`` with a
``retry_after``). Said once, at the start, rather than left for the user to discover as idle agents.
"""

from __future__ import annotations

from typing import Any

from tasks.registry import InvalidParams


def team_line(agents: int, n_blocks: int) -> str | None:
    """One line when ``agents`` exceed ``n_blocks`` (None when every agent can hold a block)."""
    if agents <= n_blocks:
        return None
    blocks = f"{n_blocks} block{'s' if n_blocks != 1 else ''}"
    return (
        f"{agents} agents for {blocks}: at most {n_blocks} work at once (one agent per block); "
        f"the other {agents - n_blocks} wait for a free block"
    )


def team_error(exc: InvalidParams, team: dict[str, Any], given: dict[str, Any], agents: int) -> str:
    """The kind's refusal of a parameter, with the hint that the team set it when the user did not."""
    if exc.param in team and given.get(exc.param) is None:
        return (
            f"{exc} ({exc.param} defaults to {team[exc.param]} for a team of {agents} agents: "
            f"give --{exc.param.replace('_', '-')} or fewer --agents)"
        )
    return str(exc)
