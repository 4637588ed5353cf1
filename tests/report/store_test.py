"""The metrics-store configuration make metrics-store writes, read back by Rally's own configuration loader; a team's
store ([reporting]: datastore.secure, credentials, TLS settings, RALLY_REPORTING_DATASTORE_*) resolved by Rally's own
metrics-store code; and a store that cannot be read named with its fix (a loopback plain-HTTP stand-in behind
tests/secure_stand_in.py for TLS, credentials and privileges, no node needed: tests/test_metrics_store.py races into a
real one)."""

import json
import os
import ssl
import subprocess
import sys
from pathlib import Path

import certifi
import pytest
from esrally import config as rally_config

from report import ReportError
from report.shared import races, rally_compat, store
from tests.loopback_es import LoopbackElasticsearch
from tests.secure_stand_in import Identity, SecuredStandIn, authorize

ROOT = Path(__file__).resolve().parents[2]


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
        races.Stored(unreachable).race("abc")
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


PASSWORD = "s3cret-Pa55word"
READER = Identity("rally", password=PASSWORD, roles=["rally_reader"], indices=[(["rally-*"], ["read"])])  # reads the store


@pytest.fixture
def secured(certs):
    """(node, stand-in): the loopback node behind the secured stand-in (HTTPS with `certs`; READER the one identity)."""
    with LoopbackElasticsearch() as node, SecuredStandIn(node.port, certs, [READER]) as stand_in:
        yield node, stand_in


def reporting(home, settings, host="metrics.example", port=9243, config_name=None):
    """A Rally configuration with an Elasticsearch store: Rally's own default file (as make metrics-store writes it),
    its [reporting] section given `settings` ({"datastore.secure": "True", ...})."""
    written = store.write_config(home, host, port)
    lines = [line for line in written.read_text().splitlines() if line.split("=")[0].strip() not in settings]
    at = lines.index("[reporting]") + 1
    lines[at:at] = [f"{key} = {value}" for key, value in settings.items()]
    path = store.config_path(home, config_name)
    written.unlink()
    path.write_text("\n".join(lines) + "\n")
    return path


def settings_of(found):
    """What Rally's factory made of the store's client options: each node's scheme and certificate check."""
    nodes = found.cluster.client.transport.node_pool.all()
    return [(n.config.scheme, n.config.ssl_context and n.config.ssl_context.verify_mode) for n in nodes]


def test_a_secure_store_is_reached_with_rallys_own_client_options(tmp_path):
    ca = certifi.where()
    secure = {"datastore.secure": "True", "datastore.user": "rally", "datastore.password": PASSWORD}
    reporting(tmp_path, {**secure, "datastore.ssl.verification_mode": "none", "datastore.ssl.certificate_authorities": ca})
    found = store.Store.from_config(tmp_path)
    assert found.address == "https://metrics.example:9243" and found.config == tmp_path / ".rally" / "rally.ini"
    assert rally_compat.configured_store_options(found.cluster.client_options) == {
        "use_ssl": True,
        "verify_certs": False,
        "timeout": 120,
        "ca_certs": ca,
        "basic_auth_user": "rally",
        "basic_auth_password": PASSWORD,
    }
    assert settings_of(found) == [("https", ssl.CERT_NONE)]
    reporting(tmp_path, {"datastore.secure": "True", "datastore.api_key": "a2V5LWlkOmtleQ=="})
    found = store.Store.from_config(tmp_path)
    assert rally_compat.configured_store_options(found.cluster.client_options) == {
        "use_ssl": True,
        "verify_certs": True,
        "timeout": 120,
        "api_key": "a2V5LWlkOmtleQ==",
    }
    assert settings_of(found) == [("https", ssl.CERT_REQUIRED)]


def test_a_store_rally_refuses_is_refused_naming_the_file(tmp_path):
    path = reporting(tmp_path, {"datastore.user": "rally", "datastore.password": PASSWORD, "datastore.api_key": "a2V5"})
    with pytest.raises(ReportError, match=f"cannot use the \\[reporting\\] section of {path} .*Both basic authentication") as refused:
        store.Store.from_config(tmp_path)
    assert PASSWORD not in str(refused.value)
    reporting(tmp_path, {"datastore.secure": "True", "datastore.ssl.certificate_authorities": tmp_path / "no-ca.pem"})
    with pytest.raises(ReportError, match=f"cannot use the \\[reporting\\] section of {path} \\(no such file: {tmp_path / 'no-ca.pem'}\\)"):
        store.Store.from_config(tmp_path)


def test_a_configuration_rally_cannot_read_is_named_without_quoting_it(tmp_path):
    path = reporting(tmp_path, {"datastore.user": "rally", "datastore.password": f"50%{PASSWORD}"})
    with pytest.raises(ReportError) as refused:
        store.Store.from_config(tmp_path)
    assert str(refused.value) == f"Rally cannot read {path}: a value holding % or $ is written %% or $$ there"
    path.write_text(path.read_text().replace("[reporting]\n", "[reporting]\ndatastore.host = other\n"))
    with pytest.raises(ReportError, match="datastore.host is given twice in \\[reporting\\]"):
        store.Store.from_config(tmp_path)


def resolved_in_a_fresh_process(home, **env):
    """The store's client options with RALLY_REPORTING_DATASTORE_* set: Rally reads them when it is imported."""
    show = (
        "import json, sys; from report.shared import rally_compat, store; "
        "print(json.dumps(rally_compat.configured_store_options(store.Store.from_config(sys.argv[1]).cluster.client_options)))"
    )
    environment = {**os.environ, **{f"RALLY_REPORTING_DATASTORE_{k}": v for k, v in env.items()}}
    result = subprocess.run([sys.executable, "-c", show, str(home)], env=environment, capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_rallys_environment_variables_give_the_credentials(tmp_path):
    plain = {"use_ssl": False, "verify_certs": True, "timeout": 120}
    reporting(tmp_path, {"datastore.user": "from-file", "datastore.password": "from-file"})
    assert resolved_in_a_fresh_process(tmp_path, USER="rally", PASSWORD=PASSWORD) == {
        **plain,
        "basic_auth_user": "rally",
        "basic_auth_password": PASSWORD,
    }
    assert resolved_in_a_fresh_process(tmp_path, PASSWORD=PASSWORD)["basic_auth_user"] == "from-file"
    reporting(tmp_path, {})
    assert resolved_in_a_fresh_process(tmp_path, API_KEY="a2V5LWlkOmtleQ==") == {**plain, "api_key": "a2V5LWlkOmtleQ=="}


def test_rally_home_is_found_as_rally_finds_it(tmp_path, monkeypatch):
    store.write_config(tmp_path, "127.0.0.1", 9210)
    monkeypatch.setenv("RALLY_HOME", str(tmp_path))
    assert store.Store.from_config(None, store.CONFIG_NAME).address == "http://127.0.0.1:9210"


def test_store_failures_name_the_configuration_to_fix(tmp_path, secured, certs):
    node, stand_in = secured
    tls = {"datastore.secure": "True", "datastore.ssl.certificate_authorities": certs.ca_cert}
    wrong = {**tls, "datastore.user": READER.name, "datastore.password": "wrong-one"}
    path = reporting(tmp_path, wrong, "127.0.0.1", stand_in.port, store.CONFIG_NAME)
    with pytest.raises(ReportError) as refused:
        store.Store.from_config(tmp_path, store.CONFIG_NAME).race_count()
    message = str(refused.value)
    # the 401 of the client's first request: the product check (GET /) on 2.13.0, the search itself on Rally's master
    refused = stand_in.authenticate(Identity(READER.name, password="wrong-one").authorization, stand_in.log[-1].path)[1]["error"]["reason"]
    assert message == (
        f"bad credentials: {stand_in.url} answered 401 ({refused}): correct datastore.user/datastore.password or "
        f"datastore.api_key in the [reporting] section of {path}, or RALLY_REPORTING_DATASTORE_USER/_PASSWORD/_API_KEY"
    )
    assert "wrong-one" not in message and PASSWORD not in message
    reporting(
        tmp_path, {**tls, "datastore.user": READER.name, "datastore.password": PASSWORD}, "127.0.0.1", stand_in.port, store.CONFIG_NAME
    )
    found = store.Store.from_config(tmp_path, store.CONFIG_NAME)
    assert found.race_count() == 0
    # no reading request of the store's is one the stand-in checks; creating an index is, and the reader may not
    with pytest.raises(ReportError) as refused:
        found._request("PUT", "/rally-races-2024", None)  # the way race_count's search takes to a ReportError
    denied = authorize(READER, "PUT", "/rally-races-2024")  # the stand-in's 403 reason: the action, the privileges granting it
    assert denied and str(refused.value) == f"the identity lacks a privilege: {stand_in.url} answered 403 ({denied})"
    assert [r["method"] for r in node.requests if r["path"] != "/"] == ["POST"]  # the search, not the PUT


def test_a_tls_store_with_its_own_ca(tmp_path, secured, certs, other_certs):
    _, stand_in = secured
    credentials = {"datastore.secure": "True", "datastore.user": READER.name, "datastore.password": PASSWORD}
    for untrusted in [{}, {"datastore.ssl.certificate_authorities": other_certs.ca_cert}]:  # the system's CAs, another CA
        path = reporting(tmp_path, {**credentials, **untrusted}, "127.0.0.1", stand_in.port, store.CONFIG_NAME)
        with pytest.raises(ReportError) as refused:
            store.Store.from_config(tmp_path, store.CONFIG_NAME).race_count()
        assert str(refused.value) == (
            f"TLS to {stand_in.url} failed (certificate verify failed: unable to get local issuer certificate): give the CA that "
            f"signed the store's certificate as datastore.ssl.certificate_authorities in the [reporting] section of {path}, "
            "or datastore.ssl.verification_mode = none to skip verification"
        )
    with_ca = {**credentials, "datastore.ssl.certificate_authorities": certs.ca_cert}
    reporting(tmp_path, with_ca, "127.0.0.1", stand_in.port, store.CONFIG_NAME)
    assert store.Store.from_config(tmp_path, store.CONFIG_NAME).race_count() == 0
    store.write_config(tmp_path, "127.0.0.1", stand_in.port)  # plain HTTP to its TLS port
    with pytest.raises(ReportError, match=r"cannot read Rally's metrics store .* if it speaks HTTPS, set datastore.secure = True"):
        store.Store.from_config(tmp_path, store.CONFIG_NAME).race_count()
