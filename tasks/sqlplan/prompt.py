"""What an LLM agent is told about a sqlplan contract (``task.py``) and the shape of its answer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tasks.prompt import KindPrompt


class SqlPlanPrompt(KindPrompt):
    """SQLite query planning: the contract of ``tasks/sqlplan/task.py``."""

    def describe(self, contract: Mapping[str, Any]) -> str:
        return (
            "Task kind: sqlplan (SQLite query planning). Your block is the queries in data.queries, each "
            'with its SQL, its FROM scopes, its current plan and cost. A plan is {"orders": {scope: [tables '
            'in join order]}, "hints": [{"scope", "table", "index": index spec or null}]}: the join '
            "order is rendered with CROSS JOIN, which SQLite keeps in order, and a hint forces (or, with "
            "null, forbids) an index for one table. You may also add or drop indexes of the shared set "
            '(data.indexes); an index spec is {"table", "columns": [names], "unique": false}; a column may '
            'also be {"expr": text} and a spec may have "where": [texts] (a partial index), each text '
            "copied verbatim from data.index_terms (the queries' own expressions and constant terms; "
            "SQLite uses a partial index only for a query whose WHERE has all of its terms). "
            "Cost = SQLite VM steps to run your queries (data.cost_unit) plus a penalty beyond the index "
            "budget (data.budget_left_bytes; null means no limit). Other queries read the same tables "
            "(data.correction.readers): an index you add or drop changes their cost too. Every plan must "
            "return exactly the rows of the original query. Use only tables, columns and indexes named "
            "in the contract; do not write SQL. "
            'value is {"plans": {query id: plan, only for queries you change}, "add": [index specs], '
            '"drop": [index specs]}.'
        )

    def value_schema(self, contract: Mapping[str, Any]) -> dict[str, Any]:
        spec = {
            "type": "object",
            "properties": {
                "table": {"type": "string"},
                "columns": {"type": "array"},
                "unique": {"type": "boolean"},
                "where": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["table", "columns"],
        }
        return {
            "type": "object",
            "properties": {
                "plans": {"type": "object"},
                "add": {"type": "array", "items": spec},
                "drop": {"type": "array", "items": spec},
            },
        }
