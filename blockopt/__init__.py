"""The ``blockopt`` command line (wiring only; the product lives in coordinator/, agents/, tasks/)."""
