"""report.shared.rally_compat: each shape of the Rally internals that differ (2.13.0's and master's, as small fakes) gives the
same answer, and so does the installed Rally, whichever it is (make test-fast, or make test-fast RALLY=<checkout>)."""

import pytest
from esrally.utils import opts

from report.shared import rally_compat, store

HOSTS = {"default": [{"host": "es1.example", "port": 9243}], "remote": [{"host": "es9.example", "port": 9200}]}


class Options213:
    """esrally.utils.opts.TargetHosts / ClientOptions on 2.13.0: `default` is the `default` entry (KeyError without)."""

    def __init__(self, parsed):
        self.parsed_options = parsed

    @property
    def default(self):
        return self.parsed_options["default"]

    @property
    def all_options(self):
        return self.parsed_options


class OptionsMaster:
    """The same on Rally's master: no `default`; `default_or_first` is the `default` entry, or the first."""

    def __init__(self, parsed):
        self.parsed_options = parsed

    @property
    def default_or_first(self):
        return self.parsed_options.get("default") or next(iter(self.parsed_options.values()))

    @property
    def all_options(self):
        return self.parsed_options


class KeepaliveNode:
    """Stands for master's esrally.metrics.KeepaliveUrllib3HttpNode (a class, as Rally's metrics store passes it)."""


@pytest.mark.parametrize("shape", [Options213, OptionsMaster])
def test_each_shape_gives_the_default_clusters_entry(shape):
    assert rally_compat.default_of(shape(HOSTS)) == [{"host": "es1.example", "port": 9243}]
    assert rally_compat.default_of(shape({"default": {"timeout": 60, "use_ssl": True}})) == {"timeout": 60, "use_ssl": True}


def test_without_a_default_cluster_each_rally_does_as_its_race_would():
    """2.13.0 has no such cluster (report.shared.cluster.settings names a KeyError as unusable settings); master takes the first."""
    only_remote = {"remote": HOSTS["remote"]}
    with pytest.raises(KeyError):
        rally_compat.default_of(Options213(only_remote))
    assert rally_compat.default_of(OptionsMaster(only_remote)) == HOSTS["remote"]


def test_the_installed_rallys_options_give_the_default_clusters_entry():
    hosts = opts.TargetHosts("es1.example:9243,es2.example:9243")
    assert rally_compat.default_of(hosts) == [{"host": "es1.example", "port": 9243}, {"host": "es2.example", "port": 9243}]
    named = opts.TargetHosts('{"remote": ["es9.example:9200"], "default": ["es1.example:9243"]}')
    assert rally_compat.default_of(named) == [{"host": "es1.example", "port": 9243}]
    client_options = opts.ClientOptions("use_ssl:true,verify_certs:false", target_hosts=hosts)
    assert rally_compat.default_of(client_options) == {"timeout": 60, "use_ssl": True, "verify_certs": False}  # Rally's default timeout
    assert rally_compat.default_of(opts.ClientOptions(opts.ClientOptions.DEFAULT_CLIENT_OPTIONS, target_hosts=hosts)) == {"timeout": 60}


def test_each_shape_of_the_stores_client_options_gives_what_its_configuration_says():
    configured = {"use_ssl": True, "verify_certs": True, "timeout": 120, "basic_auth_user": "rally", "basic_auth_password": "p"}
    of_213 = dict(configured)  # 2.13.0's metrics store adds nothing
    of_master = {**configured, "node_class": KeepaliveNode}  # master's adds its keep-alive node
    for options in (of_213, of_master):
        assert rally_compat.configured_store_options(options) == configured
    assert of_master["node_class"] is KeepaliveNode  # the connection keeps what Rally added


def test_the_installed_rallys_store_adds_only_keys_the_adapter_knows_and_the_report_connects_with_them(tmp_path):
    store.write_config(tmp_path, "127.0.0.1", 9210)
    _, options, _ = store.resolve(tmp_path, store.CONFIG_NAME)
    assert rally_compat.configured_store_options(options) == {"use_ssl": False, "verify_certs": True, "timeout": 120}
    assert set(options) - {"use_ssl", "verify_certs", "timeout"} <= set(rally_compat.STORE_CONNECTION_KEYS)
    found = store.Store.from_config(tmp_path, store.CONFIG_NAME)  # no request: Rally's client connects lazily
    if "node_class" in options:  # master: the report's connection to the store is Rally's keep-alive one
        assert all(isinstance(node, options["node_class"]) for node in found.cluster.client.transport.node_pool.all())
