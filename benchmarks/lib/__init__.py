"""Helpers the benchmark scripts share (not scripts themselves): CLI conventions, git refs as trees, the
routing harness, the trivial endpoint and the headless browser."""
