"""The metrics-store configuration make metrics-store writes, read back by Rally's own configuration loader, and a
store that cannot be read named with its fix (no node needed: tests/test_metrics_store.py races into a real one)."""

import pytest
from esrally import config as rally_config

from report import ReportError, races, store


def test_rally_reads_the_written_configuration_as_an_elasticsearch_store(tmp_path, monkeypatch):
    path = store.write_config(tmp_path, "127.0.0.1", 9210)
    assert path == tmp_path / ".rally" / f"rally-{store.CONFIG_NAME}.ini"
    monkeypatch.setenv("RALLY_HOME", str(tmp_path))
    cfg = rally_config.Config(config_name=store.CONFIG_NAME)
    cfg.load_config()
    assert cfg.opts("reporting", "datastore.type") == "elasticsearch"
    assert (cfg.opts("reporting", "datastore.host"), cfg.opts("reporting", "datastore.port")) == ("127.0.0.1", "9210")
    assert cfg.opts("reporting", "datastore.number_of_replicas") == "0"
    assert store.Store.from_config(tmp_path, store.CONFIG_NAME).address == "http://127.0.0.1:9210"
    assert store.Store.from_config(tmp_path) is None  # no rally.ini of the user's there: files, as before


def test_an_in_memory_configuration_means_no_store(tmp_path):
    (tmp_path / ".rally").mkdir()
    (tmp_path / ".rally" / "rally.ini").write_text("[reporting]\ndatastore.type = in-memory\n")
    assert store.Store.from_config(tmp_path) is None


def test_an_unreachable_store_is_named_with_its_fix(tmp_path):
    config = store.write_config(tmp_path, "127.0.0.1", 9)  # port 9 (discard): nothing listens on loopback
    unreachable = store.Store.from_config(tmp_path, store.CONFIG_NAME)
    with pytest.raises(ReportError, match=r"cannot read Rally's metrics store at http://127.0.0.1:9 .*make metrics-store"):
        races.from_store(unreachable, "abc")
    config.unlink()
    with pytest.raises(ReportError, match="make metrics-store writes it"):
        store.Store.from_config(tmp_path, store.CONFIG_NAME)


def test_racing_into_a_store_that_is_not_set_up_is_refused_with_the_fix(tmp_path):
    """make race METRICS_STORE=yes checks first: else Rally would make a default (in-memory) configuration of that
    name and race without a word."""
    with pytest.raises(ReportError, match="make metrics-store writes it"):
        store.main(["--check", "--rally-home", str(tmp_path)])
    store.write_config(tmp_path, "127.0.0.1", 9)
    with pytest.raises(ReportError, match=r"cannot read Rally's metrics store at http://127.0.0.1:9 .*make metrics-store"):
        store.main(["--check", "--rally-home", str(tmp_path)])
    store.config_path(tmp_path, store.CONFIG_NAME).write_text("[reporting]\ndatastore.type = in-memory\n")
    with pytest.raises(ReportError, match="keeps results in memory: run make metrics-store"):
        store.main(["--check", "--rally-home", str(tmp_path)])
