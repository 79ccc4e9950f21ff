"""Synthetic quadratic F(x) = ½xᵀAx − bᵀx with a known optimum (docs/architecture.md §3).

This is where the convergence theory is checked to machine precision: the
exact optimum is F* = −½bᵀA⁻¹b, the exact correction for block i is
Σ_{j≠i} A_ij x_j, and two block moves interact by c_ij = Δx_iᵀA_ijΔx_j.

One job over 400 lines: a whole kind (instance, Task, proposer) small enough to read as one worked example.
"""

from __future__ import annotations

import pathlib
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from tasks import capabilities
from tasks.base import APriori, Draft, InvalidProposal, Proposer, Reference, Task
from tasks.block_matrix import BlockMatrix, symmetric_blocks
from tasks.prompt import KindPrompt


class QuadraticParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    blocks: int = Field(16, ge=1, le=4096, description="number of blocks n")
    dim: int = Field(4, ge=1, le=256, description="size d of each block")
    coupling: float = Field(
        0.3, ge=0.0, le=1.0, description="0 = separable blocks, 1 = fully coupled Gram matrix"
    )
    ridge: float = Field(0.1, gt=0.0, le=100.0, description="diagonal shift; larger = better conditioned")
    seed: int = Field(0, ge=0, description="instance seed")
    neighbours: int | None = Field(
        None,
        ge=1,
        le=64,
        description="sparse coupling: each block is coupled to about this many random others (none: all pairs)",
    )


class QuadraticProposerParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    noise: float = Field(0.0, ge=0.0, description="std-dev σ of Gaussian noise on the correction vector")
    staleness: int = Field(0, ge=0, description="use other blocks' values from k versions ago")


@dataclass(frozen=True)
class QuadState:
    """x and the cached product Ax; arrays are never mutated after construction."""

    x: np.ndarray
    ax: np.ndarray


def coupling_graph(p: QuadraticParams) -> list[tuple[int, int]]:
    """The coupled block pairs of a sparse instance: each block draws ``neighbours // 2`` (at least 1)
    random partners, so degrees average about ``neighbours`` and no block is left uncoupled."""
    assert p.neighbours is not None
    rng = np.random.default_rng([p.seed, 1])
    draws = max(1, p.neighbours // 2)
    pairs: set[tuple[int, int]] = set()
    for i in range(p.blocks):
        others: Any = (
            rng.choice(p.blocks - 1, size=min(draws, p.blocks - 1), replace=False) if p.blocks > 1 else []
        )
        for o in others:
            j = int(o) + (int(o) >= i)
            pairs.add((min(i, j), max(i, j)))
    return sorted(pairs)


def generate_sparse_matrix(p: QuadraticParams) -> tuple[BlockMatrix, np.ndarray]:
    """Sparse block coupling: A_ij = c·G_ij/√d on the coupling graph's pairs, and diagonal blocks
    A_ii = M_iM_iᵀ/d + (ridge + Σ_j ‖A_ij‖₂)·I. SPD by construction (block Gershgorin):
    xᵀAx ≥ Σ_i (λ_min(A_ii) − Σ_j ‖A_ij‖₂)|x_i|² > 0."""
    rng = np.random.default_rng(p.seed)
    d, n = p.dim, p.blocks
    entries: list[tuple[int, int, np.ndarray]] = []
    shift = np.full(n, p.ridge)
    for i, j in coupling_graph(p):
        block = p.coupling * rng.standard_normal((d, d)) / np.sqrt(d)
        entries.append((i, j, block))
        norm = float(np.linalg.norm(block, 2))
        shift[i] += norm
        shift[j] += norm
    for i in range(n):
        m = rng.standard_normal((d, d))
        entries.append((i, i, m @ m.T / d + shift[i] * np.eye(d)))
    b = rng.standard_normal(n * d)
    return BlockMatrix(n, d, blocks=symmetric_blocks(entries)), b


def generate_matrix(p: QuadraticParams) -> tuple[np.ndarray, np.ndarray]:
    """A = (1−c)·blockdiag(S) + c·S with S = GGᵀ/N + ridge·I: SPD by construction.

    A convex combination of two SPD matrices (a principal block-diagonal part of
    an SPD matrix is SPD) is SPD for every c in [0, 1]. With ``neighbours``, the
    sparse construction of ``generate_sparse_matrix`` instead.
    """
    if p.neighbours is not None:
        matrix, b = generate_sparse_matrix(p)
        return matrix.dense(), b
    rng = np.random.default_rng(p.seed)
    size = p.blocks * p.dim
    g = rng.standard_normal((size, size))
    s = g @ g.T / size + p.ridge * np.eye(size)
    diag = np.zeros_like(s)
    for i in range(p.blocks):
        sl = slice(i * p.dim, (i + 1) * p.dim)
        diag[sl, sl] = s[sl, sl]
    a = (1.0 - p.coupling) * diag + p.coupling * s
    b = rng.standard_normal(size)
    return a, b


class QuadraticPrompt(KindPrompt):
    value_key = "x"
    strict_schema = True

    def describe(self, contract: Mapping[str, Any]) -> str:
        d = contract["data"]["dim"]
        return (
            "Task kind: quadratic. Your block is a vector of "
            f"{d} real numbers. Choose y to minimize your surrogate "
            "s(y) = 0.5*y'Ay - b'y + y'c, where A = data.local_objective.A "
            f"({d}x{d}, symmetric positive definite), b = data.local_objective.b and "
            "c = data.correction (how the other blocks, held fixed, pull on yours). "
            "Your current value is data.x. The exact minimizer solves A y = b - c. "
            f"value must be a list of {d} finite numbers; predicted_improvement is s(x) - s(y)."
        )

    def value_schema(self, contract: Mapping[str, Any]) -> dict[str, Any]:
        d = int(contract["data"]["dim"])
        return {"type": "array", "items": {"type": "number"}, "minItems": d, "maxItems": d}

    def surrogate_gain(self, contract: Mapping[str, Any], value: Any) -> float | None:
        data = contract["data"]
        a = np.asarray(data["local_objective"]["A"], dtype=float)
        b = np.asarray(data["local_objective"]["b"], dtype=float)
        c = np.asarray(data["correction"], dtype=float)
        x = np.asarray(data["x"], dtype=float)
        y = np.asarray(value, dtype=float)

        def s(v: np.ndarray) -> float:
            return float(0.5 * v @ a @ v - b @ v + v @ c)

        return s(x) - s(y)


class QuadraticTask(Task[QuadState, QuadraticParams]):
    """Synthetic coupled quadratic with a known optimum (checks the convergence theory exactly)."""

    kind = "quadratic"
    Params = QuadraticParams
    ProposerParams = QuadraticProposerParams
    prompt = QuadraticPrompt
    presets = {"theory": {"blocks": 16, "dim": 4, "coupling": 0.3, "seed": 7}}
    example = {"blocks": 6, "dim": 3, "coupling": 0.5, "seed": 1, "neighbours": 2}
    """Sparse: some blocks' footprints are disjoint, so the contract suite checks they do not interact."""

    def __init__(self, params: QuadraticParams) -> None:
        super().__init__(params)
        self.p = params
        self.d = params.dim
        if params.neighbours is None:
            dense, self.b = generate_matrix(params)
            self.matrix = BlockMatrix(params.blocks, params.dim, dense=dense)
            self._optimum = float(-0.5 * self.b @ np.linalg.solve(dense, self.b))
        else:  # only the coupled blocks are stored; F* = F(x*) with x* from conjugate gradients
            self.matrix, self.b = generate_sparse_matrix(params)
            x_star = self.matrix.minimizer(self.b)
            self._optimum = float(0.5 * x_star @ self.matrix.matvec(x_star) - self.b @ x_star)
        self._coupled = self.matrix.neighbours
        self._local_lists: dict[int, tuple[list[list[float]], list[float]]] = {}
        self._a_priori: APriori | None = None

    @property
    def a(self) -> np.ndarray:
        """A as one dense array (built on demand for a sparse instance: for tests and small sizes)."""
        return self.matrix.dense()

    def _sl(self, i: int) -> slice:
        return slice(i * self.d, (i + 1) * self.d)

    @property
    def name(self) -> str:
        p = self.p
        sparse = f"-k{p.neighbours}" if p.neighbours is not None else ""
        return f"quadratic-n{p.blocks}-d{p.dim}-c{p.coupling:g}{sparse}-s{p.seed}"

    @property
    def n_blocks(self) -> int:
        return self.p.blocks

    def initial_state(self) -> QuadState:
        x = np.zeros(self.p.blocks * self.d)
        return QuadState(x=x, ax=self.matrix.matvec(x))

    def objective(self, state: QuadState) -> float:
        """From the cached Ax (kept equal to A·x by every constructor of a state): O(n·d), not a product."""
        x = state.x
        return float(0.5 * x @ state.ax - self.b @ x)

    def apply(self, state: QuadState, changes: Mapping[int, np.ndarray]) -> QuadState:
        """Sparse A: Ax updated along the changed blocks' couplings only, Σ_i Σ_{j coupled to i} A_ji Δ_i
        (linear in the changes); dense A: one product (BLAS beats a block loop over every pair)."""
        x = state.x.copy()
        if not self.matrix.sparse:
            for i, v in changes.items():
                x[self._sl(i)] = v
            return QuadState(x=x, ax=self.matrix.matvec(x))
        ax = state.ax.copy()
        for i, v in changes.items():
            sl = self._sl(i)
            step = np.asarray(v, dtype=float) - x[sl]
            x[sl] = v
            for j in self._coupled[i]:
                ax[self._sl(j)] += self.matrix.block(j, i) @ step
        return QuadState(x=x, ax=ax)

    def evaluate_change(self, state: QuadState, changes: Mapping[int, np.ndarray]) -> float:
        """F(x+Δ) = F(x) + Σ_i Δ_iᵀ(Ax−b)_i + ½ Σ_{i,j} Δ_iᵀA_ijΔ_j, touching only changed blocks."""
        x, ax = state.x, state.ax
        f = float(0.5 * x @ ax - self.b @ x)
        steps = {i: np.asarray(v) - x[self._sl(i)] for i, v in changes.items()}
        if len(steps) > self.BLOCKWISE_CHANGES and not self.matrix.sparse:
            return f + self._change_terms(state, steps)
        for i, di in steps.items():  # only coupled pairs: linear in the changes for a sparse A
            sl = self._sl(i)
            f += float(di @ (ax[sl] - self.b[sl]))
            coupled = self._coupled[i]
            for j in (coupled & steps.keys()) if len(coupled) < len(steps) else steps.keys() & coupled:
                f += 0.5 * float(di @ self.matrix.block(i, j) @ steps[j])
        return f

    BLOCKWISE_CHANGES = 2
    """Up to this many changed blocks, ``evaluate_change`` sums block products one by one (cheapest for a
    single proposal); above it, with a dense A, one matrix product (the checked merge evaluates whole rounds:
    64 changed blocks of a dense A were 2,080 block products in Python, ~20 ms per check, now ~0.3 ms)."""

    def _change_terms(self, state: QuadState, steps: Mapping[int, np.ndarray]) -> float:
        """Σ_i Δ_iᵀ(Ax−b)_i + ½ ΔᵀAΔ over the changed blocks of a dense A in one product (a sparse A keeps
        the block loop, linear in its coupled pairs)."""
        changed = np.fromiter(steps, dtype=np.intp, count=len(steps))
        coords = (changed[:, None] * self.d + np.arange(self.d)).ravel()
        full = np.zeros_like(state.x)
        full[coords] = np.concatenate([np.asarray(v, dtype=float) for v in steps.values()])
        return float(full @ (state.ax - self.b)) + 0.5 * float(full @ self.matrix.matvec(full))

    def interaction(
        self,
        state: QuadState,
        p: tuple[int, Any],
        q: tuple[int, Any],
        f0: float | None = None,
    ) -> float:
        """Closed form c_ij = Δx_iᵀ A_ij Δx_j."""
        (i, vi), (j, vj) = p, q
        if i == j:
            return capabilities.measured_interaction(self, state, p, q, f0)
        di = np.asarray(vi) - state.x[self._sl(i)]
        dj = np.asarray(vj) - state.x[self._sl(j)]
        return float(di @ self.matrix.block(i, j) @ dj)

    def interactions(
        self,
        state: QuadState,
        items: Sequence[tuple[int, Any]],
        pairs: Sequence[tuple[int, int]],
        f0: float | None = None,
    ) -> list[float]:
        """Every asked c_ij of a round in one vectorized pass over the pairs' blocks A_ij: linear in the
        pairs (a product over all proposals' steps was quadratic in the proposals)."""
        if not pairs:
            return []
        m = len(items)
        blocks = np.fromiter((b for b, _ in items), dtype=np.intp, count=m)
        steps = np.stack([np.asarray(v, dtype=float) - state.x[self._sl(b)] for b, v in items])
        left = np.fromiter((a for a, _ in pairs), dtype=np.intp, count=len(pairs))
        right = np.fromiter((b for _, b in pairs), dtype=np.intp, count=len(pairs))
        coupling = self.matrix.blocks_of(blocks[left], blocks[right])  # (pairs, d, d)
        values = np.einsum("pi,pij,pj->p", steps[left], coupling, steps[right]).tolist()
        for k in np.flatnonzero(blocks[left] == blocks[right]).tolist():  # same block: the generic rule
            a, b = pairs[k]
            values[k] = self.interaction(state, items[a], items[b], f0)
        return values

    A_PRIORI_MAX_SIZE = 2048
    """Above this many coordinates the eigenvalues are not computed (no a priori bound is stated)."""

    def a_priori(self) -> APriori | None:
        """μ = λ_min(D⁻¹A), λ = λ_max(D⁻¹A), D = blockdiag(A_ii), m blocks (docs/architecture.md §5).

        Best single exact block step: g_{t+1} <= (1 − μ/m)·g_t; merging all (Jacobi): (1 − μ(2 − λ))·g_t.
        """
        if self._a_priori is None:
            size = self.p.blocks * self.d
            if size > self.A_PRIORI_MAX_SIZE:
                return None
            a = self.a  # dense (built once for a sparse instance)
            inv_chol = np.zeros_like(a)  # D^{-1/2} in Cholesky form: eig(D⁻¹A) = eig(L⁻¹AL⁻ᵀ)
            for i in range(self.p.blocks):
                sl = self._sl(i)
                inv_chol[sl, sl] = np.linalg.inv(np.linalg.cholesky(a[sl, sl]))
            eig = np.linalg.eigvalsh(inv_chol @ a @ inv_chol.T)
            mu, lam, m = float(eig[0]), float(eig[-1]), float(self.p.blocks)
            self._a_priori = APriori(
                constants={"mu": mu, "lambda": lam, "m": m},
                factor={"independent": mu / m, "checked": mu * max(1.0 / m, 2.0 - lam)},
            )
        return self._a_priori

    def block_value(self, state: QuadState, block: int) -> np.ndarray:
        return state.x[self._sl(block)].copy()

    def block_elements(self, state: QuadState, block: int) -> frozenset[Hashable]:
        """Block i holds the coordinates x[i·d : (i+1)·d]."""
        return frozenset(("x", k) for k in range(block * self.d, (block + 1) * self.d))

    def written_elements(self, state: QuadState, block: int, value: Any) -> frozenset[Hashable]:
        """The wire value is the block's slice, written in place by position: it can name no other coordinate."""
        return self.block_elements(state, block)

    def footprint(self, state: QuadState, block: int, value: Any) -> frozenset[Hashable]:
        """The blocks whose correction term this move changes (its coupled coordinates)."""
        return self._coupled[block]

    def contract(self, state: QuadState, block: int) -> dict[str, Any]:
        sl = self._sl(block)
        a_ii = self.matrix.block(block, block)
        x_i = state.x[sl]
        correction = state.ax[sl] - a_ii @ x_i
        local = self._local_lists.get(block)
        if local is None:  # A_ii and b_i as lists: fixed per block, built once (a lease's contract each time)
            local = self._local_lists[block] = (a_ii.tolist(), self.b[sl].tolist())
        return {
            "kind": self.kind,
            "dim": self.d,
            "x": x_i.tolist(),
            "local_objective": {"A": [list(row) for row in local[0]], "b": list(local[1])},
            "correction": correction.tolist(),
            "surrogate": "minimize 0.5*y'Ay - b'y + y'correction over y",
        }

    def validate(self, block: int, value: Any) -> np.ndarray:
        if not 0 <= block < self.n_blocks:
            raise InvalidProposal(f"block {block} does not exist (0..{self.n_blocks - 1})", "wrong_block")
        try:
            arr = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            raise InvalidProposal("block value must be a list of numbers", "bad_shape") from None
        except OverflowError:  # an integer JSON can carry and a float cannot (400 digits)
            raise InvalidProposal("block value must be finite", "bad_value") from None
        if arr.shape != (self.d,):
            raise InvalidProposal(f"block value must have shape ({self.d},), got {arr.shape}", "bad_shape")
        if not np.all(np.isfinite(arr)):
            raise InvalidProposal("block value must be finite", "bad_value")
        return arr

    def encode_value(self, value: np.ndarray) -> list[float]:
        return np.asarray(value, dtype=float).tolist()

    def reference(self) -> Reference:
        method = (
            "closed form -b^T A^-1 b / 2 (dense solve)"
            if self.params.neighbours is None
            else "F(x*), x* by conjugate gradients on the sparse A"
        )
        return Reference(self._optimum, "optimum", method=method, proven=True)

    def feasible(self, state: QuadState) -> bool:
        return True

    def dump_state(self, state: QuadState) -> dict[str, Any]:
        """x and the cached Ax, so a reloaded state has bit for bit the objective it was stored with."""
        return {"x": state.x.tolist(), "ax": state.ax.tolist()}

    def load_state(self, data: Any) -> QuadState:
        x = np.asarray(data["x"], dtype=float)
        ax = np.asarray(data["ax"], dtype=float) if "ax" in data else self.matrix.matvec(x)
        return QuadState(x=x, ax=ax)

    def run_seed(self) -> int:
        return self.p.seed

    def view_model(self, state: QuadState) -> dict[str, Any]:
        """Per-block residual ‖(Ax − b)_i‖: zero at the optimum, so the heat strip shows where work is left."""
        r = state.ax - self.b
        return {"residuals": [float(np.linalg.norm(r[self._sl(i)])) for i in range(self.p.blocks)]}

    @classmethod
    def view_renderer(cls) -> pathlib.Path:
        return pathlib.Path(__file__).with_name("quadratic_view.js")

    def lag_rounds(self, knobs: BaseModel) -> int:
        """A stale agent legitimately proposes nothing while its view catches up (``QuadraticProposer``)."""
        return QuadraticProposerParams.model_validate(knobs.model_dump()).staleness

    def make_proposer(self, knobs: BaseModel, seed: int = 0) -> QuadraticProposer:
        k = QuadraticProposerParams.model_validate(knobs.model_dump())
        return QuadraticProposer(noise=k.noise, staleness=k.staleness, seed=seed)

    def scale(self) -> float:
        return max(1.0, abs(self._optimum))


class QuadraticProposer(Proposer):
    """Minimizes the block surrogate exactly: y = A_ii⁻¹(b_i − correction).

    ``noise`` perturbs the correction; ``staleness`` k replaces it by the oldest
    one this agent received for the block during its own last k leases (of any
    block; the current one when it saw none), modelling an agent that reads the
    other blocks k rounds late (an agent takes about one lease a round). The
    window is the agent's lease clock, not its leases of that block: an agent
    that gets a block back only every few rounds, as agents do when blocks
    rotate among them, would otherwise keep a correction many rounds old, and
    the lag would outgrow the k rounds the stall rule waits (``QuadraticTask.lag_rounds``).
    """

    def __init__(self, noise: float = 0.0, staleness: int = 0, seed: int = 0) -> None:
        self.noise = noise
        self.staleness = staleness
        self.rng = np.random.default_rng(seed)
        self._leases = 0
        self._seen: dict[int, list[tuple[int, np.ndarray]]] = {}

    def _correction(self, block: int, exact: np.ndarray) -> np.ndarray:
        self._leases += 1
        if self.staleness == 0:
            return exact
        recent = [(t, c) for t, c in self._seen.get(block, []) if t >= self._leases - self.staleness]
        self._seen[block] = [*recent, (self._leases, exact)]
        return self._seen[block][0][1]

    def propose(self, contract: Mapping[str, Any]) -> Draft | None:
        data = contract["data"]
        a = np.asarray(data["local_objective"]["A"], dtype=float)
        b = np.asarray(data["local_objective"]["b"], dtype=float)
        x = np.asarray(data["x"], dtype=float)
        corr = self._correction(int(contract["block"]), np.asarray(data["correction"], dtype=float))
        if self.noise > 0.0:
            corr = corr + self.noise * self.rng.standard_normal(corr.shape)
        y = np.linalg.solve(a, b - corr)

        def surrogate(v: np.ndarray) -> float:
            return float(0.5 * v @ a @ v - b @ v + v @ corr)

        predicted = surrogate(x) - surrogate(y)
        # It solved its surrogate exactly; whether the correction it was given is exact is what the a priori
        # bound then tests (noise and staleness are inexact corrections the agent cannot see).
        return Draft(
            block=int(contract["block"]),
            value=y.tolist(),
            predicted_improvement=predicted,
            info={"exact_minimizer": True},
        )


TASK = QuadraticTask
