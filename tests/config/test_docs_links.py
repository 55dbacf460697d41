"""Every relative link and image of the README and docs/ names a file of the repository (a
renamed doc or a screenshot left out fails here, not in a reader's browser)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def broken_links(document: Path) -> list[str]:
    broken = []
    for target in LINK.findall(document.read_text(encoding="utf-8")):
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # a URL or an anchor in the page
        path = target.split("#", 1)[0]
        if path and not (document.parent / path).exists():
            broken.append(target)
    return broken


def test_every_relative_link_of_the_docs_names_a_file():
    problems = {str(document.relative_to(ROOT)): broken_links(document) for document in documents()}
    assert {name: links for name, links in problems.items() if links} == {}


def test_a_missing_target_is_reported(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("See [here](gone.md), ![shot](img/none.png) and [web](https://x.test).")
    assert broken_links(page) == ["gone.md", "img/none.png"]
