"""import-linter contract types of our own (pyproject.toml's contract_types), for the two rules its built-in types
cannot state: what report/ may import of runners/ (runners.contracts; in a study's report module, also its own
runner), and what a folder of scripts that is no package (corpora-gen/) may import. docs/repository.md states the
rules; tests/test_layers.py breaks each one."""

import ast
from pathlib import Path

from importlinter.application import output
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck


def _within(module, package):
    return module == package or module.startswith(package + ".")


class ReadsThroughContract(Contract):
    """Each module under `importers` imports, of `target`, only what is under `allowed`, and, where `mirror` is set,
    its own counterpart there: report.studies.<x>[.<y>] may import <mirror>.<x> (its own runner) and its submodules.
    Direct imports only: what the allowed modules import in turn is their own package's business."""

    importers = fields.ListField(subfield=fields.ModuleField())
    target = fields.ModuleField()
    allowed = fields.ListField(subfield=fields.ModuleField())
    mirror = fields.ModuleField(required=False)

    def _allowed(self, importer, imported):
        if any(_within(imported, a.name) for a in self.allowed):
            return True
        if not self.mirror:
            return False
        for package in self.importers:
            if _within(importer, package.name) and importer != package.name:
                own = self.mirror.name + "." + importer[len(package.name) + 1 :].split(".")[0]
                return _within(imported, own)
        return False

    def check(self, graph, verbose):
        wrong = []
        for package in self.importers:
            for importer in sorted({package.name} | graph.find_descendants(package.name)):
                for imported in sorted(graph.find_modules_directly_imported_by(importer)):
                    if _within(imported, self.target.name) and not self._allowed(importer, imported):
                        lines = [d["line_number"] for d in graph.get_import_details(importer=importer, imported=imported)]
                        wrong.append((importer, imported, lines))
        return ContractCheck(kept=not wrong, metadata={"wrong": wrong})

    def render_broken_contract(self, check):
        for importer, imported, lines in check.metadata["wrong"]:
            output.print_error(f"{importer} -> {imported} (l.{', '.join(map(str, lines))})", bold=False)
            output.new_line()


class ScriptsImportContract(Contract):
    """Each Python file of `folder` (scripts, not a package: the graph does not hold them) imports, of `target`, only
    what is under `allowed`; `exceptions` lists "file: module" pairs allowed besides, each for a reason pyproject.toml
    states."""

    folder = fields.StringField()
    target = fields.StringField()
    allowed = fields.ListField(subfield=fields.StringField())
    exceptions = fields.ListField(subfield=fields.StringField(), required=False)

    def check(self, graph, verbose):
        excepted = {tuple(part.strip() for part in pair.split(":", 1)) for pair in (self.exceptions or [])}
        wrong = []
        for path in sorted(Path(self.folder).glob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
                if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                for name in names:
                    if _within(name, self.target) and not any(_within(name, a) for a in self.allowed):
                        if (path.name, name) not in excepted:
                            wrong.append((str(path), name, node.lineno))
        return ContractCheck(kept=not wrong, metadata={"wrong": wrong})

    def render_broken_contract(self, check):
        for path, imported, line in check.metadata["wrong"]:
            output.print_error(f"{path} -> {imported} (l.{line})", bold=False)
            output.new_line()
