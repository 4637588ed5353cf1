"""The map of the docs in three layers (issue 88), as Rally's docs have: a README a newcomer reads to the first race in
two screens, guides under 15 KB that say what to do first, and the measurements on dated pages in docs/findings/,
each one linked from a guide. The glossary defines each term in one sense. A page that grows past its bound, a finding
without a date or without a guide pointing at it, or a README whose first race sinks under lab notes fails here."""

import datetime
import math
import re

from tests.test_links import REPO, inline_links, without_code, without_fences

DOCS = REPO / "docs"
FINDINGS = DOCS / "findings"
GUIDE_BYTES = 15_000  # "none is over 15 KB" (wc -c)
SCREEN_LINES, SCREEN_WIDTH = 60, 100  # "it fits two screens (~60 lines of 100 chars) to the first race"
README_SCREENS = 2
FINDING_NAME = re.compile(r"^(\d{4}-\d{2}-\d{2})-[a-z0-9]+(?:-[a-z0-9]+)*\.md$")
# the guides the issue names: how to race, read a report, keep a team's history, add a study, test
FIRST_STEPS = ("race.md", "reports.md", "history.md", "repository.md", "adding-a-study.md", "tests.md")
GLOSSARY_TERMS = ("cell", "node start", "arm", "round", "plan", "pass")


def screen_lines(text):
    """Lines as a 100-character screen shows them: a longer line wraps."""
    return sum(max(1, math.ceil(len(line) / SCREEN_WIDTH)) for line in text.splitlines())


def test_every_guide_is_under_15_kb():
    over = {page.name: page.stat().st_size for page in sorted(DOCS.glob("*.md")) if page.stat().st_size > GUIDE_BYTES}
    assert not over, f"guides over {GUIDE_BYTES} bytes (move measurements to docs/findings/, detail to a page of its own): {over}"


def test_every_finding_is_a_dated_page():
    pages = sorted(FINDINGS.iterdir())
    assert pages, "docs/findings/ holds no finding"
    for page in pages:
        named = FINDING_NAME.match(page.name)
        assert named, f"docs/findings/{page.name}: not named YYYY-MM-DD-<topic>.md"
        datetime.date.fromisoformat(named.group(1))  # a real date, or ValueError names it
        assert page.read_text(encoding="utf-8").startswith("# "), f"docs/findings/{page.name}: no title"


def test_every_finding_is_linked_from_a_guide_or_the_readme():
    linked = set()
    for page in [REPO / "README.md", *DOCS.glob("*.md")]:
        for _, target in inline_links(without_code(page.read_text(encoding="utf-8"))):
            where = target.partition("#")[0]
            if where:
                linked.add((page.parent / where).resolve())
    orphans = [page.name for page in sorted(FINDINGS.glob("*.md")) if page.resolve() not in linked]
    assert not orphans, f"findings no guide links to (every figure a guide quotes links to its finding): {orphans}"


def test_the_readme_reaches_its_first_race_within_two_screens():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    fences = [i for i, line in enumerate(text.splitlines()) if line.startswith("```")]
    assert fences, "README.md has no command block"
    head = "\n".join(text.splitlines()[: fences[1] + 1])
    assert "make race" in head, "README.md's first command block is not the race"
    assert screen_lines(head) <= SCREEN_LINES, f"README.md to its first command: {screen_lines(head)} screen lines"
    assert screen_lines(text) <= README_SCREENS * SCREEN_LINES, (
        f"README.md is {screen_lines(text)} screen lines of {SCREEN_WIDTH} characters: more than {README_SCREENS} screens "
        "(detail belongs in docs/race.md and the other guides)"
    )


def test_the_readme_states_the_answer_beside_the_command_and_links_its_finding():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    answer = text[text.index("```bash") :].split("\n## ", 1)[0]
    assert re.search(r"\*\*The study's answer\*\*", answer), "the study's answer is not beside make race"
    assert "](docs/findings/" in answer, "the study's answer does not link the finding it comes from"


def test_each_guide_says_what_to_do_first():
    missing = [name for name in FIRST_STEPS if "**What to do first:**" not in (DOCS / name).read_text(encoding="utf-8")]
    assert not missing, f"guides that do not say what to do first: {missing}"


def test_the_glossary_defines_each_term_once():
    text = without_fences((DOCS / "glossary.md").read_text(encoding="utf-8"))
    headings = [line[3:].strip().lower() for line in text.splitlines() if line.startswith("## ")]
    for term in GLOSSARY_TERMS:
        assert headings.count(term) == 1, f"the glossary defines {term!r} {headings.count(term)} times (a heading each)"
    assert not [h for h in headings if h != "pass" and h.endswith(" pass")], "'pass' defined in two senses"
