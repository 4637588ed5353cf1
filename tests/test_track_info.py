"""esrally info tells the truth about the track: document counts of the generated corpus, and a bad parameter named
there, not rendered silently as something else. Real esrally, no node."""

import pytest

from tests.conftest import TRACK_DIR, generate, run_rally

pytestmark = [pytest.mark.slow, pytest.mark.rally_process]  # each test an esrally process (1-3 s)


def info(home, *args):
    result = run_rally(home, "info", f"--track-path={TRACK_DIR}", "--offline", *args, timeout=300)
    return result.returncode, result.stdout + result.stderr


def test_info_names_a_bad_parameter(tmp_path):
    code, output = info(tmp_path, "--track-params=epochs:x")
    assert code != 0
    assert "track parameter epochs must be an integer of at least 1, got 'x'" in output


def test_an_unknown_track_parameter_is_named_by_rally(tmp_path):
    """Rally's own check (an unused track parameter is an error in 2.13), at load: the same in a race."""
    code, output = info(tmp_path, "--track-params=bulk_sise:500")
    assert code != 0 and "Unused track parameters ['bulk_sise']" in output


def test_info_counts_the_documents_of_the_generated_corpus(tmp_path):
    code, output = info(tmp_path)
    assert code == 0, output
    assert "document counts are placeholders: no corpus generated" in output  # said plainly, before make corpus
    generate(tmp_path, "--epochs", "2", "--rows-per-epoch", "20000")
    code, output = info(tmp_path, "--track-params=epochs:2")
    assert code == 0, output
    assert "Documents: 40,000" in output and "placeholders" not in output
    code, output = info(tmp_path)  # 5 epochs asked of a 2-epoch corpus
    assert "no generated epoch 3, 4, 5" in output
