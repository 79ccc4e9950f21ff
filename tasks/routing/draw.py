"""Pictures of a plan: a PNG of all paths with remaining conflicts marked, and a GIF of the robots moving."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.colors import ListedColormap  # noqa: E402
from PIL import Image  # noqa: E402

from tasks.routing.instance import Instance  # noqa: E402
from tasks.routing.occupancy import OccupancyIndex, Path  # noqa: E402

_MAP_COLOURS = ListedColormap(["#2b2b2b", "#f4f4f0"])  # blocked, free
MAX_FRAMES = 160


def _colours(n: int) -> list[tuple[float, float, float, float]]:
    cmap = plt.get_cmap("tab20" if n > 10 else "tab10")
    return [cmap(i % cmap.N) for i in range(n)]


def _base(inst: Instance, title: str, size: float = 7.5) -> tuple[plt.Figure, plt.Axes]:
    g = inst.grid
    scale = size / max(g.width, g.height)
    fig, ax = plt.subplots(
        figsize=(max(3.0, g.width * scale) + 0.4, max(3.0, g.height * scale) + 0.8), dpi=110
    )
    free = np.array(g.free, dtype=float).reshape(g.height, g.width)
    ax.imshow(free, cmap=_MAP_COLOURS, vmin=0, vmax=1, origin="upper", interpolation="nearest")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(title, fontsize=10)
    return fig, ax


def conflict_cells(inst: Instance, paths: tuple[Path, ...]) -> list[tuple[int, int, int]]:
    """(t, x, y) of every vertex conflict and of the first cell of every edge conflict."""
    n = inst.grid.n_cells
    index = OccupancyIndex.build(n, dict(enumerate(paths)))
    out: list[tuple[int, int, int]] = []
    for k, robots in index.vert.items():
        if len(robots) > 1:
            t, c = divmod(k, n)
            out.append((t, *inst.grid.xy(c)))
    for cell, (robot, start) in index.park.items():
        for r, times in index.visits.get(cell, {}).items():
            for t in times:
                if t >= start and r != robot:
                    out.append((t, *inst.grid.xy(cell)))
    nn = n * n
    for k in index.edge:
        t, rest = divmod(k, nn)
        a, b = divmod(rest, n)
        if a < b and (t * n + b) * n + a in index.edge:
            out.append((t, *inst.grid.xy(a)))
    return out


def draw_plan(inst: Instance, paths: tuple[Path, ...], out: str) -> str:
    g = inst.grid
    soc = sum(len(p) - 1 for p in paths)
    bad = conflict_cells(inst, paths)
    title = f"{inst.name}: {len(paths)} robots, sum of costs {soc}, " + (
        f"{len(bad)} conflicts (red x)" if bad else "collision-free"
    )
    fig, ax = _base(inst, title)
    colours = _colours(len(paths))
    rng = np.random.default_rng(0)
    for r, p in enumerate(paths):
        jitter = rng.uniform(-0.18, 0.18, size=2)  # so overlapping routes stay distinguishable
        xs = [c % g.width + jitter[0] for c in p]
        ys = [c // g.width + jitter[1] for c in p]
        ax.plot(xs, ys, "-", color=colours[r], lw=1.4, alpha=0.85)
        sx, sy = g.xy(inst.starts[r])
        gx, gy = g.xy(inst.goals[r])
        ax.plot(sx, sy, "o", color=colours[r], ms=5, mec="black", mew=0.5)
        ax.plot(gx, gy, "s", color=colours[r], ms=6, mfc="none", mew=1.6)
    if bad:
        ax.plot([x for _, x, _ in bad], [y for _, _, y in bad], "x", color="red", ms=10, mew=2.5)
    ax.plot([], [], "o", color="grey", mec="black", label="start")
    ax.plot([], [], "s", color="grey", mfc="none", label="goal")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=3, fontsize=8, frameon=False)
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)
    return out


def draw_animation(inst: Instance, paths: tuple[Path, ...], out: str, fps: int = 4) -> str:
    """A GIF of the robots moving, up to ``MAX_FRAMES`` frames.

    The map and the goals are drawn once; each frame restores that background and draws only the robots,
    the conflicts and the clock (matplotlib's blitting), and every frame shares the first one's palette.
    Redrawing and re-quantizing the whole figure per frame took 23 s of a 28 s `blockopt run` on
    maze-32-32-2 (docs/notes/2026-12-01-routing-at-density.md, "Pictures")."""
    g = inst.grid
    makespan = max(len(p) for p in paths) - 1
    step = max(1, -(-(makespan + 1) // MAX_FRAMES))
    times = list(range(0, makespan + 1, step))
    if times[-1] != makespan:
        times.append(makespan)
    bad: dict[int, list[tuple[int, int]]] = {}
    for t, x, y in set(conflict_cells(inst, paths)):
        bad.setdefault(t, []).append((x, y))
    fig, ax = _base(inst, inst.name, size=6.0)
    colours = _colours(len(paths))
    for r in range(len(paths)):
        gx, gy = g.xy(inst.goals[r])
        ax.plot(gx, gy, "s", color=colours[r], ms=5, mfc="none", mew=1.2)
    dots = ax.scatter(
        [0] * len(paths), [0] * len(paths), s=36, c=colours, edgecolors="black", linewidths=0.5, zorder=3
    )
    marks = ax.scatter([], [], s=120, marker="x", c="red", linewidths=2.5, zorder=4)
    label = ax.text(
        0.01,
        0.99,
        "",
        transform=ax.transAxes,
        va="top",
        fontsize=9,
        bbox={"facecolor": "white", "alpha": 0.8, "pad": 2},
    )
    moving = (dots, marks, label)
    for artist in moving:
        artist.set_animated(True)  # left out of the background

    def at(p: Path, t: int) -> tuple[int, int]:
        return g.xy(p[t] if t < len(p) else p[-1])

    fig.tight_layout()
    canvas = fig.canvas
    assert isinstance(canvas, FigureCanvasAgg)  # (matplotlib.use("Agg") above)
    canvas.draw()
    background = canvas.copy_from_bbox(fig.bbox)
    frames: list[Image.Image] = []
    palette: Image.Image | None = None
    for t in times:
        canvas.restore_region(background)
        dots.set_offsets([at(p, t) for p in paths])
        hits = bad.get(t, [])
        marks.set_offsets(hits if hits else np.empty((0, 2)))
        arrived = sum(1 for p in paths if len(p) - 1 <= t)
        label.set_text(f"t = {t} / {makespan}   arrived {arrived}/{len(paths)}")
        for artist in moving:
            ax.draw_artist(artist)
        rgb = Image.fromarray(np.asarray(canvas.buffer_rgba())[..., :3])
        if palette is None:  # from the first frame, which shows every robot
            palette = rgb.quantize(colors=255, dither=Image.Dither.NONE)
        frames.append(rgb.quantize(palette=palette, dither=Image.Dither.NONE))
    plt.close(fig)
    frames[0].save(out, save_all=True, append_images=frames[1:], duration=1000 // fps, loop=0)
    return out
