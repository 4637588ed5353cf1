"""The generated corpora the track processor's tests load the track with (tests/runners/track_load.py), once per test
module."""

import pytest

import cmgen
from runners.contracts import corpus
from tests.runners.track_load import SMALL, WIDTH_PARAMS


@pytest.fixture(scope="module")
def corpus_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    cmgen.generate(SMALL, root)
    return root


@pytest.fixture(scope="module")
def width_root(tmp_path_factory):
    """Only the width sets (no main corpus): a coverage-width race needs nothing else."""
    root = tmp_path_factory.mktemp("width-data")
    for width in WIDTH_PARAMS["widths"]:
        params = cmgen.Params(epochs=1, rows_per_epoch=2400, nodes=width, tasks=20, seed=11)
        cmgen.generate(params, root, corpus_set=corpus.width_set(width, 2400))
    return root
