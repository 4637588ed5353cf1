"""The track as Rally renders it (Rally's own template code), each text parsed and compiled once per process: the unit
tier renders the track hundreds of times."""

import json
from pathlib import Path

TRACK_DIR = Path(__file__).resolve().parents[1] / "tracks" / "cluster-metrics"


def _compile_each_template_once():
    """Rally's loader makes a new Jinja environment for every render of the track (and reads it twice a load: once to
    find its parameters, once to render it), so Jinja parses and compiles the same templates again each time: most of
    the 0.3 s of a render here, and the unit tier renders the track hundreds of times. A template's code depends only
    on its text and the environment's syntax settings (the key below), so the suite parses and compiles each text once
    per process (and scans each parsed tree for its parameters once); the code runs in the environment that asked for it,
    with that environment's globals and filters."""
    import jinja2
    import jinja2.meta

    compile_template, parse_template = jinja2.Environment.compile, jinja2.Environment.parse
    compiled, parsed = {}, {}

    def settings(env):
        syntax = ("block_start_string", "block_end_string", "variable_start_string", "variable_end_string",
                  "comment_start_string", "comment_end_string", "line_statement_prefix", "line_comment_prefix",
                  "trim_blocks", "lstrip_blocks", "newline_sequence", "keep_trailing_newline", "optimized", "is_async")  # fmt: skip
        cacheable = not env.extensions and not callable(env.autoescape)
        return tuple(getattr(env, name) for name in syntax) + (env.autoescape,) if cacheable else None

    def compile_once(self, source, name=None, filename=None, raw=False, defer_init=False):
        key = settings(self)
        if key is None or not isinstance(source, str):
            return compile_template(self, source, name, filename, raw, defer_init)
        key += (source, name, filename, raw, defer_init)
        if key not in compiled:
            compiled[key] = compile_template(self, source, name, filename, raw, defer_init)
        return compiled[key]

    def parse_once(self, source, name=None, filename=None):  # Rally's parameter scan only reads the tree it gets
        key = settings(self)
        if key is None:
            return parse_template(self, source, name, filename)
        key += (source, name, filename)
        if key not in parsed:
            parsed[key] = parse_template(self, source, name, filename)
        return parsed[key]

    def find_undeclared_once(tree):  # Rally's parameter scan: once per tree parse_once keeps (alive, so ids stay theirs)
        if not any(tree is kept for kept in parsed.values()):
            return find_undeclared(tree)
        if id(tree) not in scanned:
            scanned[id(tree)] = frozenset(find_undeclared(tree))
        return set(scanned[id(tree)])

    find_undeclared, scanned = jinja2.meta.find_undeclared_variables, {}
    jinja2.Environment.compile, jinja2.Environment.parse = compile_once, parse_once
    jinja2.meta.find_undeclared_variables = find_undeclared_once


_compile_each_template_once()


def rendered_track(params=None):
    """The track as Rally renders it (Rally's own template code), with these track parameters: a fresh copy each time,
    of a text rendered once per process and parameters (told apart by their repr, so a tuple is not taken for a list)."""
    from esrally.track import loader

    params = params or {}
    key = repr(sorted(params.items(), key=repr))
    if key not in _RENDERED:
        _RENDERED[key] = loader.render_template_from_file(str(TRACK_DIR / "track.json"), params)
    return json.loads(_RENDERED[key])


_RENDERED = {}


def rendered_challenges(params=None):
    """The track's challenges by name: a new challenge is tested without editing a list."""
    return {c["name"]: c for c in rendered_track(params)["challenges"]}
