"""Every inline Markdown link of the repository's tracked .md files resolves: a relative target names a file or folder
that exists, and an anchor (#frag alone, or file.md#frag) names a heading of that Markdown file by GitHub's slug rule
(or an explicit <a id/name>). Sections move between the README and docs/*.md; a link left behind renders as a dead link
on GitHub and fails nowhere else, so this test names each one (file:line: target (why)). No network: web and mail
links are left out."""

import re
import subprocess
from pathlib import Path
from urllib.parse import unquote

REPO = Path(__file__).resolve().parents[1]

FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")
HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
HTML_ANCHOR = re.compile(r"""<a\s[^>]*?\b(?:id|name)\s*=\s*["']([^"']+)["']""", re.I)
LINK_OPEN = re.compile(r"\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(")  # link text may wrap, but not over a blank line
INLINE_LINK = re.compile(r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\([^)]*\)")
WEB = ("http://", "https://", "mailto:")


def markdown_files(root=REPO):
    """The tracked Markdown files, relative to root."""
    listed = subprocess.run(["git", "ls-files", "-z", "*.md"], cwd=root, capture_output=True, text=True, check=True).stdout
    return [Path(name) for name in listed.split("\0") if name]


def without_fences(text):
    """text with its fenced code blocks blanked out (newlines kept, so offsets keep their lines)."""
    lines, fence = text.splitlines(keepends=True), None
    for i, line in enumerate(lines):
        opened = FENCE.match(line)
        if fence is None:
            if not opened:
                continue
            fence = opened.group(1)
        elif opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence) and not line[opened.end() :].strip():
            fence = None
        lines[i] = re.sub(r"[^\n]", " ", line)
    return "".join(lines)


def without_code(text):
    """text with fenced code blocks and inline code spans blanked out (newlines kept, so offsets keep their lines)."""
    text, out, pos = without_fences(text), [], 0
    for run in re.finditer(r"`+", text):
        if run.start() < pos:
            continue
        closing = re.compile(rf"(?<!`){run.group()}(?!`)")
        end = closing.search(text, run.end())
        if end is None or re.search(r"\n[ \t]*\n", text[run.end() : end.start()]):
            continue  # an unmatched run is literal backticks; a code span does not cross a blank line
        out.append(text[pos : run.start()])
        out.append(re.sub(r"[^\n]", " ", text[run.start() : end.end()]))
        pos = end.end()
    out.append(text[pos:])
    return "".join(out)


def slug(heading):
    """GitHub's anchor of a heading's text: its rendered text (links to their text, HTML tags and emphasis marks
    dropped), lowercased, stripped, every character but a letter, digit, space, hyphen or underscore removed, each
    space a hyphen."""
    text = INLINE_LINK.sub(r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text)
    parts = re.split(r"(`+.*?`+)", text)  # _emphasis_ loses its marks, not snake_case, a lone _source or `_code_`
    text = "".join(part if i % 2 else re.sub(r"(?<!\w)(_{1,2})(?=\S)(.+?)(?<=\S)\1(?!\w)", r"\2", part) for i, part in enumerate(parts))
    text = "".join(ch for ch in text.strip().lower() if ch.isalnum() or ch in " -_")
    return text.replace(" ", "-")


def anchors(path):
    """The anchors a Markdown file defines: its headings' slugs (a repeated one gets -1, -2, ... as GitHub numbers them)
    and explicit <a id="..."> / <a name="...">."""
    text = without_fences(path.read_text(encoding="utf-8"))
    found, seen = set(HTML_ANCHOR.findall(text)), {}
    for line in text.splitlines():
        heading = HEADING.match(line)
        if not heading:
            continue
        base = result = slug(heading.group(2))
        while result in seen:
            seen[base] += 1
            result = f"{base}-{seen[base]}"
        seen[result] = 0
        found.add(result)
    return found


def inline_links(text):
    """(line, target) of each inline link or image outside code: the destination of [text](destination "title")."""
    for opened in LINK_OPEN.finditer(text):
        if re.search(r"\n[ \t]*\n", opened.group(1)):
            continue
        i, depth, target = opened.end(), 0, []
        if text[i : i + 1] == "<":
            end = text.find(">", i)
            if end == -1:
                continue
            target = text[i + 1 : end]
        else:
            while i < len(text) and not text[i].isspace():
                if text[i] == "\\" and i + 1 < len(text):
                    target.append(text[i : i + 2])
                    i += 2
                    continue
                if text[i] == "(":
                    depth += 1
                elif text[i] == ")":
                    if depth == 0:
                        break
                    depth -= 1
                target.append(text[i])
                i += 1
            target = "".join(target)
        yield text.count("\n", 0, opened.end()) + 1, target  # the line of the target, where a wrapped link ends


def broken_links(root, files):
    """Every broken link of these Markdown files (paths relative to root), as 'file:line: target (why)'."""
    root, broken, cache = Path(root).resolve(), [], {}

    def anchors_of(path):
        if path not in cache:
            cache[path] = anchors(path)
        return cache[path]

    for name in files:
        source = root / name
        for line, target in inline_links(without_code(source.read_text(encoding="utf-8"))):
            if not target or target.lower().startswith(WEB):
                continue
            where, _, fragment = target.partition("#")
            where = unquote(where)
            path = (root / where.lstrip("/") if where.startswith("/") else source.parent / where).resolve() if where else source
            if where and not path.is_relative_to(root):
                why = "outside the repository"
            elif where and not path.exists():
                why = "no such file or folder"
            elif fragment and path.suffix.lower() == ".md" and path.is_file() and unquote(fragment) not in anchors_of(path):
                why = f"no heading or anchor #{fragment} in {path.relative_to(root)}"
            else:
                continue
            broken.append(f"{name}:{line}: {target} ({why})")
    return broken


def test_every_markdown_link_resolves():
    broken = broken_links(REPO, markdown_files())
    assert not broken, f"{len(broken)} broken Markdown link(s):\n" + "\n".join(broken)


def test_a_broken_link_and_a_broken_anchor_are_reported(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "other.md").write_text("# Other page\n\n## The schedule: interleaved or blocked\n\n## Notes\n\n## Notes\n")
    (tmp_path / "README.md").write_text(
        "# Top\n\n"
        "[good](docs/other.md#the-schedule-interleaved-or-blocked) and [twice](docs/other.md#notes-1) and [self](#top)\n"
        "[gone](docs/missing.md)\n"
        "[moved](docs/other.md#verdicts)\n"
        "[a wrapped\nlink](#nowhere)\n"
        "`[in code](nowhere.md)`\n\n"
        "```\n[in a fence](nowhere.md)\n```\n"
        "[web](https://example.com/nowhere)\n"
    )
    broken = broken_links(tmp_path, [Path("README.md"), Path("docs/other.md")])
    assert broken == [
        "README.md:4: docs/missing.md (no such file or folder)",
        "README.md:5: docs/other.md#verdicts (no heading or anchor #verdicts in docs/other.md)",
        "README.md:7: #nowhere (no heading or anchor #nowhere in README.md)",
    ]


def test_slug_follows_githubs_rule():
    assert slug("Its rates, measured (`tests/report/history_test.py`)") == "its-rates-measured-testsreporthistory_testpy"
    assert slug("What a task costs — the schedule") == "what-a-task-costs--the-schedule"
    assert slug("Seed 004 at its scale ([source](x.md), large)") == "seed-004-at-its-scale-source-large"
    assert slug("Größe _emphasis_ and snake_case") == "größe-emphasis-and-snake_case"
    assert slug("What it costs: `_source`, and Seed 004 (_source)") == "what-it-costs-_source-and-seed-004-_source"
