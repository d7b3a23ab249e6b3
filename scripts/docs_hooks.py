"""MkDocs hooks for the manual (mkdocs.yml): what could drift from the code is generated here
when the site is built.

- `<!-- kconsole:keys -->` in a page becomes the key table, from the console's own bindings
  (the same function the in-app help uses, kconsole.ui.screens.help.key_sections).
- A link or picture to `repo/PATH` is a file of the repository (a snapshot test's SVG, say):
  it is added to the site as it is, so the manual shows the picture the tests hold.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent.parent
KEYS_MARK = "<!-- kconsole:keys -->"
REPO_LINK = re.compile(r"\]\((?:\.\./)*repo/([^)#\s]+)")


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def key_table() -> str:
    """Every key the console answers to, by where it works, as Markdown tables."""
    from kconsole.ui.app import make_app
    from kconsole.ui.screens.help import key_sections

    out: list[str] = []
    for title, rows in key_sections(make_app(None)):
        if not rows:
            continue
        out += [f"### {title}", "", "| key | does |", "|---|---|"]
        out += [f"| `{_cell(keys)}` | {_cell(text)} |" for keys, text in rows]
        out.append("")
    return "\n".join(out)


def on_page_markdown(markdown: str, **_: Any) -> str:
    """Put the generated tables where their marks are."""
    if KEYS_MARK in markdown:
        markdown = markdown.replace(KEYS_MARK, key_table())
    return markdown


def on_files(files: Files, config: Any) -> Files:
    """Add every repository file a page links to as repo/PATH."""
    wanted: set[str] = set()
    for f in files.documentation_pages():
        wanted.update(REPO_LINK.findall(Path(f.abs_src_path or "").read_text(encoding="utf-8")))
    for path in sorted(wanted):
        src = ROOT / path
        if not src.is_file():
            raise FileNotFoundError(f"a page links to repo/{path}, which is not in the repository")
        files.append(File.generated(config, f"repo/{path}", abs_src_path=str(src)))
    return files
