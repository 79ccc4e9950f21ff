"""The coordinator, by layer. Imports point down only: a module imports its own layer and those below
(``tests/project/test_layers.py`` checks every import against this list, top to bottom):

    api       the HTTP edge: app factory and middleware (api/main.py), routers per resource
              (api/routes/), shared dependencies (api/deps.py), OpenAPI, read access; ui/ (the web page)
    runtime   the service: tasks, agents and tokens, leases and budgets, proposals, the round lock,
              rounds, the async window, the scheduler; metrics, the wire shapes, the engine-only runner
    reports   ledger, books, plots, trajectories: what a run's rows say
    store     the Store interface, its backends and their contract
    engine    the pure core: rounds, arrivals, selection, convergence, forecast, interference, records
    base      errors (the error tree), status (the one TaskStatus), settings, json_integers (3.0 is an
              integer in a request body), cancelling (stopping background tasks)

The store sits under reports so that reports may read stored rows, and over engine because it keeps
engine records; nothing below runtime knows about HTTP.
"""
