"""No room too big: every Python module of the repository is at most MAX_LINES lines, and every function takes at most
MAX_PARAMETERS parameters (self and cls not counted; *args and **kwargs one each), unless the def line's comment says
why (a signature someone else fixes: Rally's, a callback's). A room past either bound is split by concern, or its
arguments become one options object (report/history/changes.py JudgeOptions, runners/processor.py's request)."""

import ast
import subprocess

from tests.conftest import REPO

MAX_LINES = 600
MAX_PARAMETERS = 6
REASON = "# parameters:"  # on a def line: why this signature takes more


def python_modules():
    listed = subprocess.run(["git", "ls-files", "-z", "*.py"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    return [name for name in listed.split("\0") if name and (REPO / name).is_file()]


def too_many_parameters(source, name="<source>"):
    """[(line, function, count)] of the functions of source over MAX_PARAMETERS without a stated reason."""
    lines, found = source.splitlines(), []
    for node in ast.walk(ast.parse(source, name)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            named = [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs]
            count = len([p for p in named if p not in ("self", "cls")]) + (a.vararg is not None) + (a.kwarg is not None)
            header = "\n".join(lines[node.lineno - 1 : node.body[0].lineno - 1])
            if count > MAX_PARAMETERS and REASON not in header:
                found.append((node.lineno, node.name, count))
    return found


def test_no_module_is_over_its_bound():
    long = {name: n for name in python_modules() if (n := len((REPO / name).read_text().splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines (split each by concern): {long}"


def test_no_function_takes_more_than_its_bound_without_a_reason():
    wide = [
        f"{name}:{line} {function} ({count})"
        for name in python_modules()
        for line, function, count in too_many_parameters((REPO / name).read_text(), name)
    ]
    assert not wide, f"functions over {MAX_PARAMETERS} parameters with no '{REASON}' comment on their def line: {wide}"


def test_the_bound_counts_as_it_says():
    def body(signature, comment=""):
        return f"def f({signature}):{comment}\n    pass\n"

    assert too_many_parameters(body("a, b, c, d, e, f")) == []
    assert too_many_parameters(body("a, b, c, d, e, f, g")) == [(1, "f", 7)]
    assert too_many_parameters(body("self, a, b, c, d, e, f")) == []
    assert too_many_parameters(body("a, b, c, d, e, *rest, **options")) == [(1, "f", 7)]
    assert too_many_parameters(body("a, b, c, d, e, f, *, g=1")) == [(1, "f", 7)]
    assert too_many_parameters(body("a, b, c, d, e, f, g", "  # parameters: Rally's signature")) == []
