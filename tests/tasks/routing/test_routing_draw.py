"""The routing GIF: one frame per time step shown, and each frame shows the robots where they are then.

The frames are blitted over a background drawn once (tasks/routing/draw.py); a frame that kept the
previous frame's robots would show them twice, so the share of pixels changed since the first frame
would grow along the animation instead of staying level.
"""

from __future__ import annotations

from pathlib import Path as FsPath

import numpy as np
from PIL import Image

from tasks.registry import create_task
from tasks.routing import RoutingTask, draw


def _frames(path: FsPath) -> list[np.ndarray]:
    with Image.open(path) as gif:
        out = []
        for i in range(gif.n_frames):
            gif.seek(i)
            out.append(np.asarray(gif.convert("RGB")))
    return out


def _task() -> RoutingTask:
    task = create_task("routing", {"map": "random-32-32-10", "robots": 30, "initial": "shortest"})
    assert isinstance(task, RoutingTask)
    return task


def test_the_gif_has_a_frame_per_time_step(tmp_path: FsPath) -> None:
    task = _task()
    paths = task.initial_state().paths
    makespan = max(len(p) for p in paths) - 1
    out = draw.draw_animation(task.inst, paths, str(tmp_path / "moves.gif"))
    frames = _frames(FsPath(out))
    assert len(frames) == makespan + 1 <= draw.MAX_FRAMES + 1
    assert not np.array_equal(frames[0], frames[-1])  # the robots moved


def test_each_frame_shows_the_robots_only_where_they_are(tmp_path: FsPath) -> None:
    task = _task()
    paths = task.initial_state().paths
    frames = _frames(FsPath(draw.draw_animation(task.inst, paths, str(tmp_path / "moves.gif"))))
    # pixels that differ from the first frame: the robots where they are now and where they started,
    # level once they have left their starts; robots left behind by earlier frames would make it grow
    off = np.array([(f != frames[0]).any(axis=2).mean() for f in frames])
    quarter = len(frames) // 4
    assert off[1:].min() > 0  # the robots move
    assert off[-quarter:].mean() < 1.1 * off[quarter : 2 * quarter].mean()
