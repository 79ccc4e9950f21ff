"""BENCHMARKS.md stays a reference: at most 600 lines, a contents list that matches its headings, and every
script, module, raw result file and note it names exists in the repository."""

from __future__ import annotations

import glob
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 600

PATH = re.compile(r"(?<![\w/.])benchmarks/[A-Za-z0-9_./*-]*[A-Za-z0-9_/*-](?![$<])")
MODULE = re.compile(r"-m benchmarks\.([a-z_]+)")
LINK = re.compile(r"\]\((?!#|https?:)([^)]+)\)")
CONTENTS_ENTRY = re.compile(r"- \[(.+)\]\(#(.+)\)$")


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def contents_problems(lines: list[str]) -> list[str]:
    """The contents list must open the file and name every section, in order, with its anchor."""
    headings = [line[3:] for line in lines if line.startswith("## ")]
    if not headings or headings[0] != "Contents":
        return ["the first section is not the contents list"]
    entries = []
    for line in lines[lines.index("## Contents") + 1 :]:
        if line.startswith("## "):
            break
        if m := CONTENTS_ENTRY.match(line.strip()):
            entries.append((m.group(1), m.group(2)))
    found = [f"contents entry {t!r} links #{a}, not #{anchor(t)}" for t, a in entries if a != anchor(t)]
    if [title for title, _ in entries] != headings[1:]:
        found.append(f"contents {[t for t, _ in entries]} do not match the headings {headings[1:]}")
    return found


def problems(text: str, root: Path) -> list[str]:
    """What is wrong with ``text`` as the benchmarks reference; empty when nothing is."""
    lines = text.splitlines()
    found = [f"{len(lines)} lines, more than {MAX_LINES}"] if len(lines) > MAX_LINES else []
    found += contents_problems(lines)
    found += [
        f"names {p}, which does not exist"
        for p in sorted(set(PATH.findall(text)))
        if not glob.glob(str(root / p))
    ]
    found += [
        f"runs benchmarks.{m}, which does not exist"
        for m in sorted(set(MODULE.findall(text)))
        if not (root / "benchmarks" / f"{m}.py").is_file()
    ]
    found += [
        f"links {link}, which does not exist"
        for link in sorted(set(LINK.findall(text)))
        if not (root / link).exists()
    ]
    return found


def test_benchmarks_md_is_a_reference_whose_paths_exist() -> None:
    assert problems((ROOT / "BENCHMARKS.md").read_text(), ROOT) == []


def _besides_length(found: list[str]) -> list[str]:
    """The problems other than the length (these tests add lines to a file that may be near its limit)."""
    return [p for p in found if "more than" not in p]


def test_a_made_up_path_or_script_is_caught() -> None:
    text = (ROOT / "BENCHMARKS.md").read_text()
    bad = (
        text
        + "\nRaw: `benchmarks/results/no_such_run.json`, `.venv/bin/python -m benchmarks.no_such_script`.\n"
    )
    assert _besides_length(problems(bad, ROOT)) == [
        "names benchmarks/results/no_such_run.json, which does not exist",
        "runs benchmarks.no_such_script, which does not exist",
    ]


def test_a_heading_missing_from_the_contents_is_caught() -> None:
    text = (ROOT / "BENCHMARKS.md").read_text().replace("- [Web UI](#web-ui)\n", "")
    assert any("do not match the headings" in p for p in problems(text, ROOT))


def test_a_wrong_anchor_and_a_long_file_are_caught() -> None:
    text = (ROOT / "BENCHMARKS.md").read_text().replace("(#web-ui)", "(#web)")
    assert "contents entry 'Web UI' links #web, not #web-ui" in problems(text, ROOT)
    assert f"{MAX_LINES + 1} lines, more than {MAX_LINES}" in problems("x\n" * (MAX_LINES + 1), ROOT)


def test_a_note_that_is_not_there_is_caught() -> None:
    text = (ROOT / "BENCHMARKS.md").read_text() + "\n- [later](docs/notes/2099-01-01-nothing.md)\n"
    assert _besides_length(problems(text, ROOT)) == [
        "links docs/notes/2099-01-01-nothing.md, which does not exist"
    ]
