"""A symmetric matrix seen as n×n blocks of size d, stored dense or as its nonzero blocks only.

The quadratic kind touches A only block by block (A_ii for a contract, A_ij for an interaction or an
incremental update), so a sparsely coupled instance keeps only the coupled blocks: memory and products
grow with n·degree, not n², and the optimum comes from conjugate gradients instead of an O(n³) solve.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np


class BlockMatrix:
    def __init__(
        self,
        n: int,
        d: int,
        dense: np.ndarray | None = None,
        blocks: Mapping[tuple[int, int], np.ndarray] | None = None,
    ) -> None:
        """Either ``dense`` (n·d × n·d) or ``blocks`` {(i, j): A_ij}, both orientations of every nonzero block."""
        self.n, self.d = n, d
        self._dense = dense
        self._a4 = dense.reshape(n, d, n, d) if dense is not None else None
        self._blocks = dict(blocks or {})
        if dense is not None:
            nonzero = np.any(self._a4 != 0.0, axis=(1, 3))  # one pass, not n² slice tests
            self.neighbours = [frozenset(np.flatnonzero(row).tolist()) for row in nonzero]
        else:
            adjacent: list[set[int]] = [set() for _ in range(n)]
            for i, j in self._blocks:
                adjacent[i].add(j)
            self.neighbours = [frozenset(a) for a in adjacent]
        """Blocks j with A_ij ≠ 0 (the block itself included), per block i."""

    @property
    def sparse(self) -> bool:
        return self._dense is None

    def block(self, i: int, j: int) -> np.ndarray:
        if self._a4 is not None:
            return self._a4[i, :, j, :]
        found = self._blocks.get((i, j))
        return found if found is not None else np.zeros((self.d, self.d))

    def blocks_of(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """A_{rows[k], cols[k]} stacked: (len(rows), d, d); linear in the pairs asked."""
        if self._a4 is not None:
            return self._a4[rows, :, cols, :]
        if len(rows) == 0:
            return np.zeros((0, self.d, self.d))
        return np.stack([self.block(int(i), int(j)) for i, j in zip(rows, cols, strict=True)])

    def matvec(self, x: np.ndarray) -> np.ndarray:
        if self._dense is not None:
            return self._dense @ x
        if not hasattr(
            self, "_stacked"
        ):  # (rows, cols, blocks) of every stored block, for one vectorized pass
            keys = list(self._blocks)
            self._stacked = (
                np.array([i for i, _ in keys], dtype=np.intp),
                np.array([j for _, j in keys], dtype=np.intp),
                np.stack([self._blocks[k] for k in keys]),
            )
        rows, cols, stacked = self._stacked
        out = np.zeros((self.n, self.d))
        np.add.at(out, rows, np.einsum("kij,kj->ki", stacked, x.reshape(self.n, self.d)[cols]))
        return out.ravel()

    def dense(self) -> np.ndarray:
        if self._dense is not None:
            return self._dense
        d = self.d
        a = np.zeros((self.n * d, self.n * d))
        for (i, j), a_ij in self._blocks.items():
            a[i * d : (i + 1) * d, j * d : (j + 1) * d] = a_ij
        return a

    def minimizer(self, b: np.ndarray) -> np.ndarray:
        """A⁻¹b: a dense solve, or block-Jacobi-preconditioned conjugate gradients run until the residual
        stops shrinking (machine precision on these well-conditioned instances)."""
        if self._dense is not None:
            return np.linalg.solve(self._dense, b)
        d = self.d
        inv = np.stack([np.linalg.inv(self.block(i, i)) for i in range(self.n)])

        def precondition(r: np.ndarray) -> np.ndarray:
            return np.einsum("kij,kj->ki", inv, r.reshape(self.n, d)).ravel()

        x = np.zeros_like(b)
        r = b.copy()
        z = precondition(r)
        p, rz = z.copy(), float(r @ z)
        best_x, best_norm = x.copy(), float(np.linalg.norm(r))
        stalled, floor = 0, 1e-15 * float(np.linalg.norm(b))
        for _ in range(10 * self.n * d):
            ap = self.matvec(p)
            curvature = float(p @ ap)
            if curvature <= 0.0:
                break
            alpha = rz / curvature
            x += alpha * p
            r -= alpha * ap
            norm = float(np.linalg.norm(r))
            if norm < best_norm:
                best_x, best_norm, stalled = x.copy(), norm, 0
            else:
                stalled += 1
            if norm <= floor or stalled >= 5:
                break
            z = precondition(r)
            rz_next = float(r @ z)
            p = z + (rz_next / rz) * p
            rz = rz_next
        return best_x


def symmetric_blocks(pairs: Sequence[tuple[int, int, np.ndarray]]) -> dict[tuple[int, int], np.ndarray]:
    """{(i, j): A_ij, (j, i): A_ijᵀ} from the upper-triangle entries (i, j, A_ij), diagonal ones once."""
    out: dict[tuple[int, int], np.ndarray] = {}
    for i, j, a_ij in pairs:
        out[(i, j)] = a_ij
        if i != j:
            out[(j, i)] = a_ij.T
    return out
