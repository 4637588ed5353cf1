"""No function in report/ takes more than MAX_PARAMETERS parameters (positional and keyword, not self or cls; *args and
**kwargs one each), unless a comment on its def line says why: more travel together as one object (an options
dataclass, as report/history/changes.py's JudgeOptions or report/validation_proof.py's ProofEpoch)."""

import ast

from tests.conftest import REPO

MAX_PARAMETERS = 6


def too_many(source):
    """[(line, name, count)] of the functions (and lambdas) in the source with more parameters than the bound and no
    comment on their def line."""
    lines, found = source.splitlines(), []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        a = node.args
        names = [arg.arg for arg in a.posonlyargs + a.args + a.kwonlyargs if arg.arg not in ("self", "cls")]
        count = len(names) + bool(a.vararg) + bool(a.kwarg)
        if count > MAX_PARAMETERS and "#" not in lines[node.lineno - 1]:
            found.append((node.lineno, getattr(node, "name", "lambda"), count))
    return found


def test_no_function_of_report_takes_more_than_six_parameters_without_saying_why():
    found = {str(path.relative_to(REPO)): too_many(path.read_text()) for path in sorted((REPO / "report").rglob("*.py"))}
    assert not {path: functions for path, functions in found.items() if functions}


def test_the_check_names_a_long_signature_and_lets_a_commented_one_pass():
    assert too_many("def f(a, b, c, d, e, f, g):\n    pass\n") == [(1, "f", 7)]
    assert too_many("def f(self, a, b, c, d, e, *args, **kwargs):\n    pass\n") == [(1, "f", 7)]
    assert too_many("def f(a, b, c, d, e, f, g):  # the seven columns of Rally's record, as it names them\n    pass\n") == []
    assert too_many("def f(self, a, b, c, d, e, f):\n    pass\n") == []
