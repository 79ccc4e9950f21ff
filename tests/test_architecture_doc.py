"""docs/architecture.md and the code agree: every citation of it names a section that exists, and every
module it names exists.

Code cites the document as ``docs/architecture.md §N`` or ``docs/architecture.md §N "name"`` (a ``###``
subsection of section N). Each check runs on the real tree and, to show it can fail, on a small tree
written here with the fault.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = "docs/architecture.md"
CITING = ("tasks", "coordinator", "agents", "blockopt", "tests", "benchmarks", "examples", "README.md")
"""Where citations are looked for (Python modules and Markdown files)."""

CITATION = re.compile(r"docs/architecture\.md §(\d+)(?: \"([^\"]+)\")?")
SECTION = re.compile(r"^## (\d+)\. ")
SUBSECTION = re.compile(r"^### (.+?)\s*$")
MODULE = re.compile(r"`([\w/.-]+(?:\.py|/))`")
"""A backticked module or package path in the document (``engine/rounds.py``, ``tasks/routing/``)."""


def sections(doc: str) -> dict[str, set[str]]:
    """Section number -> the names of its ``###`` subsections (lower case)."""
    found: dict[str, set[str]] = {}
    current: str | None = None
    for line in doc.splitlines():
        if m := SECTION.match(line):
            current = m.group(1)
            found[current] = set()
        elif (m := SUBSECTION.match(line)) and current is not None:
            found[current].add(m.group(1).lower())
    return found


def _files(root: Path, places: tuple[str, ...], suffixes: tuple[str, ...]) -> list[Path]:
    out: list[Path] = []
    for place in places:
        path = root / place
        if path.is_file():
            out.append(path)
        elif path.is_dir():
            out += [
                p for p in sorted(path.rglob("*")) if p.suffix in suffixes and "__pycache__" not in p.parts
            ]
    return [p for p in out if p.resolve() != Path(__file__).resolve()]  # (this file spells faulty citations)


def unresolved_citations(root: Path, places: tuple[str, ...] = CITING) -> list[str]:
    """Each citation whose section (or subsection) the document lacks, as ``file:line: citation``."""
    known = sections((root / DOC).read_text())
    bad: list[str] = []
    for path in _files(root, places, (".py", ".md")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for m in CITATION.finditer(line):
                section, name = m.group(1), m.group(2)
                if section not in known or (name is not None and name.lower() not in known[section]):
                    bad.append(f"{path.relative_to(root)}:{number}: {m.group(0)}")
    return bad


def old_citations(root: Path, places: tuple[str, ...] = CITING) -> list[str]:
    """Citations of the design document kept outside the repository (``DESIGN §N``), which nobody can open."""
    return [
        f"{path.relative_to(root)}:{number}"
        for path in _files(root, places, (".py", ".md"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"\bDESIGN(\.md)? §", line)
    ]


def missing_modules(root: Path) -> list[str]:
    """Module and package paths the document names that match no file or folder of the tree (a path may be
    written relative to its package: ``engine/rounds.py`` for ``coordinator/engine/rounds.py``)."""
    tree = [
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if not any(part.startswith(".") for part in p.relative_to(root).parts)
    ]
    present = {f"/{p}" + ("/" if (root / p).is_dir() else "") for p in tree}
    named = sorted(set(MODULE.findall((root / DOC).read_text())))
    return [name for name in named if not any(p.endswith("/" + name) for p in present)]


# -- the real tree ---------------------------------------------------------------------------


def test_every_citation_of_the_document_resolves() -> None:
    assert unresolved_citations(ROOT) == []


def test_the_code_cites_the_document() -> None:
    """The check looks at real citations (none found would pass trivially)."""
    cited = [
        line
        for path in _files(ROOT, CITING, (".py",))
        for line in path.read_text().splitlines()
        if CITATION.search(line)
    ]
    assert len(cited) >= 20


def test_no_citation_of_the_design_document_outside_the_repository() -> None:
    assert old_citations(ROOT) == []


def test_every_module_the_document_names_exists() -> None:
    assert missing_modules(ROOT) == []


# -- each check fails on a faulty tree --------------------------------------------------------

DOC_TEXT = "# A\n\n## 1. Layers\n\ntext\n\n## 3. Task kinds\n\n### quadratic\n\n`engine/rounds.py`\n"


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_a_citation_of_a_missing_section_or_subsection_is_found(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            DOC: DOC_TEXT,
            "coordinator/ok.py": '"""docs/architecture.md §1; docs/architecture.md §3 "quadratic"."""\n',
            "coordinator/bad.py": '"""docs/architecture.md §9.\n\ndocs/architecture.md §3 "routing"."""\n',
            "README.md": "See docs/architecture.md §2.\n",
        },
    )
    assert unresolved_citations(tmp_path) == [
        "coordinator/bad.py:1: docs/architecture.md §9",
        'coordinator/bad.py:3: docs/architecture.md §3 "routing"',
        "README.md:1: docs/architecture.md §2",
    ]


def test_an_old_design_citation_is_found(tmp_path: Path) -> None:
    _write(tmp_path, {"tasks/x.py": '"""The kind (DESIGN §4)."""\n', "tasks/y.py": '"""Fine."""\n'})
    assert old_citations(tmp_path) == ["tasks/x.py:1"]


def test_a_module_the_document_names_that_is_gone_is_found(tmp_path: Path) -> None:
    doc = DOC_TEXT + "`runtime/core.py` and `store/redis/`\n"
    _write(tmp_path, {DOC: doc, "coordinator/engine/rounds.py": ""})
    (tmp_path / "coordinator/store/redis").mkdir(parents=True)
    assert missing_modules(tmp_path) == ["runtime/core.py"]
