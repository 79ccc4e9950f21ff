"""The coordinator's one error tree.

Every error carries a machine-readable ``code``, a sentence saying why, and the
context it arose in; its HTTP status is a class attribute here and nowhere
else, so the API layer maps errors to responses in one line. Messages never
contain tokens.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar


class BlockoptError(Exception):
    """Base of every error the coordinator reports to a caller."""

    status: ClassVar[int] = 500
    code: ClassVar[str] = "internal_error"

    def __init__(self, message: str, **context: Any) -> None:
        super().__init__(message)
        self.message = message
        self.context = context

    def body(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message, **self._public_context()}}

    def _public_context(self) -> dict[str, Any]:
        return {k: v for k, v in self.context.items() if v is not None}

    def headers(self) -> dict[str, str]:
        """Response headers the error implies: Retry-After (whole seconds, per HTTP; the body's
        ``retry_after`` carries the precise float)."""
        retry = self.context.get("retry_after")
        return {"Retry-After": str(max(0, math.ceil(float(retry))))} if retry is not None else {}


class InvalidRequest(BlockoptError):
    """The request is malformed or names parameters that do not exist."""

    status = 400
    code = "invalid_request"


class ValidationFailed(InvalidRequest):
    """The body or query does not fit the route's model (names the field, never echoes the input)."""

    status = 422
    code = "validation_error"


class ProposalRefused(BlockoptError):
    """The proposal fails the task's structural checks (shape, legality, unknown names)."""

    status = 422
    code = "invalid_proposal"


class Unauthorized(BlockoptError):
    """No credentials, or credentials that match nothing."""

    status = 401
    code = "unauthorized"


class Forbidden(BlockoptError):
    """Credentials are valid but do not allow this action."""

    status = 403
    code = "forbidden"


class WrongBlock(Forbidden):
    """The agent submitted for a block it does not hold."""

    code = "wrong_block"


class NotFound(BlockoptError):
    status = 404
    code = "not_found"


class NoSuchVersion(NotFound):
    """A version the head has not reached (``GET .../changes``)."""

    code = "no_such_version"


class NotOffered(NotFound):
    """The task's kind does not offer this (``GET .../changes`` of a kind without ``head_changes``)."""

    code = "not_offered"


class MethodNotAllowed(BlockoptError):
    status = 405
    code = "method_not_allowed"


class Conflict(BlockoptError):
    """The request was valid when sent but the shared state has moved on."""

    status = 409
    code = "conflict"


class StaleBase(Conflict):
    """The proposal's block changed after the version it was computed on."""

    code = "stale_base"


class LeaseExpired(Conflict):
    """The lease lapsed (agent silent too long) or was released."""

    code = "lease_expired"


class TaskFinished(Conflict):
    """The task is no longer running."""

    code = "task_finished"


class VersionConflict(Conflict):
    """A version-checked commit lost the race (another commit landed first)."""

    code = "version_conflict"


class StaleFence(Conflict):
    """A round runner whose lock was taken over tried to commit (its fencing token is old)."""

    code = "stale_fence"


class VersionGone(Conflict):
    """A version older than the heads this process keeps (``GET .../changes``): the head has moved on past
    what it can tell changes from; lease again."""

    code = "version_gone"


class PayloadTooLarge(BlockoptError):
    status = 413
    code = "payload_too_large"


class RateLimited(BlockoptError):
    """Too many requests from one agent; retry after ``retry_after`` seconds."""

    status = 429
    code = "rate_limited"


class BudgetExceeded(RateLimited):
    """A task budget (rounds, seconds, tokens, calls) is spent."""

    code = "budget_exceeded"


class NoBlockAvailable(RateLimited):
    """Every block is leased; retry shortly."""

    code = "no_block_available"


class TaskPreparing(RateLimited):
    """The task is still being prepared (its kind computes its reference or first plan); retry after
    ``retry_after`` seconds."""

    code = "task_preparing"


class NotReady(BlockoptError):
    """The service is starting or stopping."""

    status = 503
    code = "not_ready"


class Unavailable(BlockoptError):
    """A dependency (the store) cannot be reached right now."""

    status = 503
    code = "unavailable"


class StoreUnavailable(Unavailable):
    """The store refused or dropped the call (Redis unreachable, the SQLite file locked past its timeout):
    nothing was changed, agents back off and retry."""

    code = "store_unavailable"


class NotSupported(BlockoptError):
    """The configured store does not implement this feature (a third-party store on an older interface)."""

    status = 501
    code = "not_supported"
