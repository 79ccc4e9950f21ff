"""The OpenAPI document a machine can use: kinds as a discriminated union, links, allowed methods.

FastAPI documents ``CreateTask.params`` as any object and ``kind`` as any
string. Here the document is completed from the installed kinds (the task
registry, so no kind is named in this module): ``CreateTask`` becomes a
``oneOf`` with one variant per kind, discriminated by ``kind``, whose
``params`` is that kind's ``Params`` schema with an example. Links chain an
agent's path through the API (create → join → lease → submit → poll, and
the task's read routes from creation) so a client or a stateful fuzzer can
follow it without reading prose.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable
from typing import Any

from fastapi import FastAPI

from tasks import capabilities
from tasks.base import Task
from tasks.registry import kinds

CREATE = ("/v1/tasks", "post")
JOIN = ("/v1/tasks/{task_id}/agents", "post")
LEASE = ("/v1/tasks/{task_id}/leases", "post")
SUBMIT = ("/v1/tasks/{task_id}/proposals", "post")
POLL = ("/v1/tasks/{task_id}/proposals/{proposal_id}", "get")
RENEW = ("/v1/tasks/{task_id}/leases/{lease_id}/renew", "post")
RELEASE = ("/v1/tasks/{task_id}/leases/{lease_id}", "delete")
ABANDON = ("/v1/tasks/{task_id}/leases/{lease_id}/abandon", "post")
CHANGES = ("/v1/tasks/{task_id}/changes", "get")
TASK_ROUTES = [
    (p, "get")
    for p in (
        "/v1/tasks/{task_id}",
        "/v1/tasks/{task_id}/rounds",
        "/v1/tasks/{task_id}/report",
        "/v1/tasks/{task_id}/solution",
        "/v1/tasks/{task_id}/agents",
        "/v1/tasks/{task_id}/view",
        "/v1/tasks/{task_id}/trajectories",
    )
]
TASK_ID = {"task_id": "$request.path.task_id"}


HTTP_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def allowed_methods(app: FastAPI, scope: dict[str, Any] | Any) -> list[str]:
    """Every method some route of this path accepts (a 405's ``Allow`` header, RFC 9110 §15.5.6).

    Asked of each route through ``matches`` alone (a full match is path and method), so routers that
    FastAPI keeps included rather than flattened answer like plain routes.
    """
    return [
        method
        for method in HTTP_METHODS
        if any(route.matches({**scope, "method": method})[0].value == 2 for route in app.router.routes)
    ]  # Match.FULL is 2


def _component_name(kind: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", kind)


def example_params(params_model: type) -> dict[str, Any]:
    """The kind's own example (``json_schema_extra`` examples) or its defaults, Nones left out."""
    extra = getattr(params_model, "model_config", {}).get("json_schema_extra")
    if isinstance(extra, dict) and extra.get("examples"):
        return dict(extra["examples"][0])
    return {k: v for k, v in params_model().model_dump(mode="json").items() if v is not None}


def add_kind_union(
    schema: dict[str, Any], installed: dict[str, type[Task[Any]]] | None = None, served: Iterable[str] = ()
) -> None:
    """Replace ``CreateTask`` with a ``oneOf`` over the kinds, discriminated by ``kind``."""
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    base = components.get("CreateTask")
    if base is None:
        return
    allowed = set(served)
    available = {k: c for k, c in sorted((installed or kinds()).items()) if not allowed or k in allowed}
    variants, mapping = [], {}
    for kind, cls in available.items():
        name = _component_name(kind)
        params = cls.Params.model_json_schema(ref_template="#/components/schemas/{model}")
        for def_name, definition in params.pop("$defs", {}).items():
            components.setdefault(def_name, definition)
        params_example = example_params(cls.Params)
        params["examples"] = [params_example]
        components[f"Params.{name}"] = params
        variant = copy.deepcopy(base)
        variant["title"] = f"CreateTask ({kind})"
        variant["properties"]["kind"] = {"type": "string", "const": kind, "title": "Kind"}
        variant["properties"]["params"] = {"$ref": f"#/components/schemas/Params.{name}"}
        add_kind_knobs(components, variant, name, cls)
        add_kind_generators(components, variant, name, cls)
        variant["required"] = sorted({*variant.get("required", []), "kind"})
        example = copy.deepcopy(base.get("examples", [{}])[0])
        example.update(kind=kind, params=params_example)
        example.get("proposer", {}).pop("knobs", None)  # the base example's knobs are one kind's
        variant["examples"] = [example]
        components[f"CreateTask.{name}"] = variant
        variants.append({"$ref": f"#/components/schemas/CreateTask.{name}"})
        mapping[kind] = f"#/components/schemas/CreateTask.{name}"
    components["CreateTask"] = {
        "title": "CreateTask",
        "description": "A task of one installed kind; `params` follows that kind's schema.",
        "oneOf": variants,
        "discriminator": {"propertyName": "kind", "mapping": mapping},
    }


def add_kind_knobs(
    components: dict[str, Any], variant: dict[str, Any], name: str, cls: type[Task[Any]]
) -> None:
    """The variant's ``proposer.knobs`` is the kind's ``ProposerParams`` schema, as the server checks them."""
    hints = components.get("ProposerHints")
    if hints is None:
        return
    knobs = cls.ProposerParams.model_json_schema(ref_template="#/components/schemas/{model}")
    for def_name, definition in knobs.pop("$defs", {}).items():
        components.setdefault(def_name, definition)
    components[f"Knobs.{name}"] = knobs
    own = copy.deepcopy(hints)
    own["title"] = f"ProposerHints ({name})"
    own["properties"]["knobs"] = {"$ref": f"#/components/schemas/Knobs.{name}"}
    components[f"ProposerHints.{name}"] = own
    variant["properties"]["proposer"] = {"$ref": f"#/components/schemas/ProposerHints.{name}"}


def generator_names(cls: type[Task[Any]]) -> tuple[str, ...] | None:
    """The kind's neighbourhood generators, when ``neighbourhoods`` names them without instance data (every
    built-in kind's does; building an instance here could take seconds); None when it needs the instance."""
    try:
        names = capabilities.neighbourhoods(cls.__new__(cls))
    except Exception:  # a kind's own code, run on a bare instance: any failure means "ask an instance"
        return None
    return tuple(names) if all(isinstance(n, str) for n in names) else None


def add_kind_generators(
    components: dict[str, Any], variant: dict[str, Any], name: str, cls: type[Task[Any]]
) -> None:
    """The variant's ``selection.generators`` may name only the kind's generators (the server refuses
    others with 400)."""
    settings, names = components.get("SelectionSettings"), generator_names(cls)
    if settings is None or names is None:
        return
    own = copy.deepcopy(settings)
    own["title"] = f"SelectionSettings ({name})"
    for option in own["properties"]["generators"].get("anyOf", []):
        if option.get("type") == "array":
            option["items"] = {"type": "string", "enum": list(names)}
    components[f"SelectionSettings.{name}"] = own
    selection = variant["properties"].get("selection", {})
    variant["properties"]["selection"] = {
        **selection,
        "$ref": f"#/components/schemas/SelectionSettings.{name}",
    }


def _operation(schema: dict[str, Any], route: tuple[str, str]) -> dict[str, Any] | None:
    path, method = route
    return schema.get("paths", {}).get(path, {}).get(method)


def _link(
    schema: dict[str, Any],
    source: tuple[str, str],
    status: str,
    name: str,
    target: tuple[str, str],
    parameters: dict[str, str],
    body: dict[str, Any] | None = None,
    description: str = "",
) -> None:
    src, dst = _operation(schema, source), _operation(schema, target)
    if src is None or dst is None or status not in src.get("responses", {}):
        return
    link: dict[str, Any] = {"operationId": dst["operationId"], "parameters": parameters}
    if body is not None:
        link["requestBody"] = body
    if description:
        link["description"] = description
    src["responses"][status].setdefault("links", {})[name] = link


def add_links(schema: dict[str, Any]) -> None:
    """create → join → lease → submit → poll; the task's reads from creation and join; lease upkeep and what
    merged since the lease;
    a stopped task's events (stop is administration, so no link leads to it)."""
    created = {"task_id": "$response.body#/id"}
    _link(
        schema,
        CREATE,
        "201",
        "Join",
        JOIN,
        created,
        description="join with this response's join_token as the bearer token",
    )
    for source, params, routes in ((CREATE, created, TASK_ROUTES[:1]), (JOIN, TASK_ID, TASK_ROUTES[1:-1])):
        for route in routes:
            last = route[0].rsplit("/", 1)[-1]
            name = "Read" + last.replace("{task_id}", "Task").capitalize()
            _link(
                schema,
                source,
                "201",
                name,
                route,
                params,
                description="with the task's read token, an agent token or the admin token",
            )
    _link(
        schema,
        JOIN,
        "201",
        "Lease",
        LEASE,
        TASK_ID,
        description="with this response's agent token as the bearer token",
    )
    lease_body = {
        "lease_id": "$response.body#/lease_id",
        "block": "$response.body#/block",
        "base_version": "$response.body#/version",
    }
    lease_id = {**TASK_ID, "lease_id": "$response.body#/lease_id"}
    _link(
        schema,
        LEASE,
        "201",
        "Submit",
        SUBMIT,
        TASK_ID,
        body=lease_body,
        description="a proposal for the leased block, on the leased version",
    )
    _link(schema, LEASE, "201", "Renew", RENEW, lease_id)
    _link(
        schema,
        LEASE,
        "201",
        "Changes",
        CHANGES,
        {**TASK_ID, "since": "$response.body#/version"},
        description="what merged since the leased version, for the search under way",
    )
    _link(schema, LEASE, "201", "Release", RELEASE, lease_id)
    _link(
        schema,
        LEASE,
        "201",
        "Abandon",
        ABANDON,
        lease_id,
        body={"block": "$response.body#/block", "base_version": "$response.body#/version"},
    )
    _link(
        schema,
        ("/v1/tasks/{task_id}/stop", "post"),
        "200",
        "Events",
        ("/v1/tasks/{task_id}/events", "get"),
        TASK_ID,
        description="the finished task's rounds and final status as server-sent events",
    )
    poll = {**TASK_ID, "proposal_id": "$response.body#/id"}
    for status in ("200", "202"):
        _link(
            schema,
            SUBMIT,
            status,
            "Poll",
            POLL,
            poll,
            description="the proposal's verdict (long-poll ?wait=)",
        )
        _link(schema, SUBMIT, status, "NextLease", LEASE, TASK_ID)


def install_schema(app: FastAPI, served_kinds: Iterable[str] = ()) -> None:
    """Make ``app.openapi()`` return the completed document (built once, then cached by FastAPI)."""
    generate = app.openapi
    served = tuple(served_kinds)

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = generate()
            add_kind_union(schema, served=served)
            add_links(schema)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
