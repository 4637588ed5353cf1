"""report.shared.cluster: the cluster as `esrally race` takes it (--target-hosts, --client-options in Rally's spellings),
reached with Rally's own client, and every failure to reach it named with its address and fix (a loopback plain-HTTP
stand-in for Elasticsearch, and tests/secure_stand_in.py in front of it for TLS, credentials and privileges)."""

import json
import ssl

import pytest
from elasticsearch import AuthenticationException
from esrally.utils import opts

from report import ReportError, accuracy
from report.shared import rally_compat
from report.shared.cluster import Cluster
from tests.loopback_es import LoopbackElasticsearch, closed_port
from tests.secure_stand_in import ADMIN, ADMIN_API_KEY, RESTRICTED, Identity, SecuredStandIn, authorize

PASSWORD = "s3cret-Pa55word"  # no identity's: a wrong password, a wrong API key
SECRETS = [PASSWORD, ADMIN.password, RESTRICTED.password, ADMIN_API_KEY.api_key, ADMIN_API_KEY.encoded_api_key]
NDJSON = b'{"index": "cluster-metrics"}\n{"size": 0}\n{"index": "cluster-metrics"}\n{"size": 0}\n'


@pytest.fixture
def secured(certs):
    """(node, stand-in): the loopback node behind the secured stand-in (HTTPS with `certs`; ADMIN, ADMIN_API_KEY, RESTRICTED)."""
    with LoopbackElasticsearch() as node, SecuredStandIn(node.port, certs) as stand_in:
        yield node, stand_in


def https(ca, *options):
    """Client options in Rally's k:v spelling: HTTPS trusting the CA file `ca`, and `options`."""
    return ",".join(["use_ssl:true", f"ca_certs:'{ca}'", *options])


def basic_auth(identity, password=None):
    return f"basic_auth_user:'{identity.name}',basic_auth_password:'{identity.password if password is None else password}'"


def media_type(header):
    """A Content-Type's media type, read alike in Elasticsearch's compatible form, which Rally's master sends
    (application/vnd.elasticsearch+x-ndjson; compatible-with=8, the oldest major it supports), and as given (2.13.0)."""
    mime, _, parameters = header.partition(";")
    assert parameters.strip() in ("", "compatible-with=8"), header
    return mime.strip().replace("/vnd.elasticsearch+", "/")


def exit_message(cluster, work):
    with pytest.raises(SystemExit) as exited, cluster.command_line():
        work()
    message = str(exited.value)
    assert not [secret for secret in SECRETS if secret in message]
    return message


def test_client_options_are_read_in_each_of_rallys_spellings(tmp_path):
    settings = {"use_ssl": True, "verify_certs": False, "basic_auth_user": "elastic", "basic_auth_password": PASSWORD, "timeout": 60}
    (tmp_path / "options.json").write_text(json.dumps({"default": settings}))
    spellings = [
        f"use_ssl:true,verify_certs:false,basic_auth_user:'elastic',basic_auth_password:'{PASSWORD}'",  # timeout:60 is Rally's default
        json.dumps({"default": settings}),
        str(tmp_path / "options.json"),  # the way secrets stay off the command line
    ]
    for spelling in spellings:
        cluster = Cluster("es1.example:9243,es2.example:9243", spelling)
        assert cluster.client_options == settings == rally_compat.default_of(opts.ClientOptions(spelling))
        assert cluster.hosts == ["https://es1.example:9243", "https://es2.example:9243"]
        for node in cluster.client.transport.node_pool.all():  # what Rally's factory made of them
            assert (node.config.scheme, node.config.ssl_context.verify_mode) == ("https", ssl.CERT_NONE)
    assert Cluster().url == "http://127.0.0.1:9200" and Cluster().client_options == {"timeout": 60}


def test_options_that_cannot_make_a_client_are_named(tmp_path):
    with pytest.raises(ReportError, match=r"cannot use --target-hosts / --client-options \(no 'port' given\)"):
        Cluster("es1.example")
    missing_ca = f"use_ssl:true,ca_certs:'{tmp_path / 'no-ca.pem'}',basic_auth_user:'elastic',basic_auth_password:'{PASSWORD}'"
    with pytest.raises(ReportError, match=f"cannot use --target-hosts / --client-options \\(no such file: {tmp_path / 'no-ca.pem'}\\)"):
        Cluster("127.0.0.1:9200", missing_ca)
    with pytest.raises(SystemExit) as exited:
        accuracy.main(["--client-options", "timeout:1:2"])  # a bad option is a usage error, before any request
    assert exited.value.code == 2


def test_basic_auth_and_api_key_reach_the_cluster_and_msearch_goes_as_ndjson(tmp_path, secured, certs):
    node, stand_in = secured
    cluster = Cluster(f"127.0.0.1:{stand_in.port}", https(certs.ca_cert, basic_auth(ADMIN)))
    assert len(cluster.post("/_msearch", NDJSON)["responses"]) == 2
    assert cluster.post("/cluster-metrics/_search?request_cache=false", {"size": 0})["hits"]["total"]["value"] == 0
    with_key = {"use_ssl": True, "ca_certs": str(certs.ca_cert), "api_key": ADMIN_API_KEY.encoded_api_key}
    (tmp_path / "key.json").write_text(json.dumps({"default": with_key}))
    Cluster(f"127.0.0.1:{stand_in.port}", str(tmp_path / "key.json")).send("GET", "/_cluster/health")
    # the stand-in authenticated each request (GET /: Rally 2.13.0's client checks the product first) and passed it on
    assert [entry for entry in stand_in.log if entry.path != "/"] == [
        (ADMIN.label, "POST", "/_msearch", 200),
        (ADMIN.label, "POST", "/cluster-metrics/_search?request_cache=false", 200),
        (ADMIN_API_KEY.label, "GET", "/_cluster/health", 200),
    ]
    requests = [r for r in node.requests if r["path"] != "/"]
    assert [media_type(r["headers"]["content-type"]) for r in requests[:2]] == ["application/x-ndjson", "application/json"]
    assert requests[0]["body"] == NDJSON


def test_which_ground_truth_the_index_matches():
    manifest = {"index": "cluster-metrics", "files": [{"documents": 5, "test_mode": False}, {"documents": 2, "test_mode": True}]}
    for count, section in [(5, "full"), (2, "test_mode")]:
        with LoopbackElasticsearch(count=count) as es:
            assert Cluster(f"127.0.0.1:{es.port}").section(manifest) == section
    with LoopbackElasticsearch(count=None) as es:
        cluster = Cluster(f"127.0.0.1:{es.port}")
        assert exit_message(cluster, lambda: cluster.section(manifest)) == (
            f"no index cluster-metrics at http://127.0.0.1:{es.port}: ingest it first (make race CHALLENGE=ingest-baseline)"
        )


def test_a_closed_port_is_unreachable_with_the_fix():
    port = closed_port()
    cluster = Cluster(f"127.0.0.1:{port}", f"basic_auth_user:'elastic',basic_auth_password:'{PASSWORD}'")
    assert exit_message(cluster, lambda: cluster.post("/_msearch", NDJSON)) == (
        f"cannot reach Elasticsearch at http://127.0.0.1:{port} (Connection refused): start it with make es-start, "
        "or correct --target-hosts"
    )


def test_wrong_credentials_are_a_401_named_without_the_password(secured, certs):
    _, stand_in = secured
    wrong = {  # client options -> the Authorization header they make
        basic_auth(ADMIN, PASSWORD): Identity(ADMIN.name, password=PASSWORD).authorization,
        f"api_key:'{PASSWORD}'": f"ApiKey {PASSWORD}",
        "timeout:60": None,
    }
    for options, header in wrong.items():
        cluster = Cluster(f"127.0.0.1:{stand_in.port}", https(certs.ca_cert, options))
        message = exit_message(cluster, lambda: cluster.post("/_msearch", NDJSON))
        # the stand-in's 401 reason for the client's first request: the product check (GET /) on 2.13.0, whose client
        # checks the product first; the _msearch itself on Rally's master (elasticsearch-py 9 checks each answer instead)
        refused = stand_in.authenticate(header, stand_in.log[-1].path)[1]["error"]["reason"]
        assert message == (
            f"bad credentials: {stand_in.url} answered 401 ({refused}): "
            "correct basic_auth_user/basic_auth_password or api_key in the client options"
        )
    good = Cluster(f"127.0.0.1:{stand_in.port}", https(certs.ca_cert, basic_auth(ADMIN)))
    assert "responses" in good.post("/_msearch", NDJSON)
    assert [entry.status for entry in stand_in.log[:3]] == [401, 401, 401]  # each refused at its first request
    assert [(entry.path, entry.status) for entry in stand_in.log[3:] if entry.path != "/"] == [("/_msearch", 200)]


def test_a_missing_privilege_is_a_403_naming_the_action_and_the_privileges_that_grant_it(secured, certs):
    node, stand_in = secured
    cluster = Cluster(f"127.0.0.1:{stand_in.port}", https(certs.ca_cert, basic_auth(RESTRICTED)))
    message = exit_message(cluster, lambda: cluster.send("PUT", "/_cluster/settings", {"persistent": {}}))
    denied = authorize(RESTRICTED, "PUT", "/_cluster/settings")  # the stand-in's 403 reason: the action, the privileges granting it
    assert denied and message == f"the identity lacks a privilege: {stand_in.url} answered 403 ({denied})"
    assert [r for r in node.requests if r["path"] != "/"] == []  # at most the product check (GET /, 2.13.0) reached the node


def test_a_secret_in_an_answer_never_reaches_the_message(secured, certs):
    """Belt and braces: even an answer that quoted the API key is named without it."""
    _, stand_in = secured
    cluster = Cluster(f"127.0.0.1:{stand_in.port}", https(certs.ca_cert, f"api_key:'{PASSWORD}'"))
    with pytest.raises(AuthenticationException) as refused:
        cluster.send("GET", "/")
    refused.value.body["error"]["reason"] = f"unable to authenticate with [{PASSWORD}]"
    message = cluster.failure(refused.value)
    assert PASSWORD not in message and "[*****]" in message


def test_plain_http_to_a_tls_port_says_to_use_ssl(secured):
    _, stand_in = secured
    cluster = Cluster(f"127.0.0.1:{stand_in.port}", basic_auth(ADMIN))
    message = exit_message(cluster, lambda: cluster.post("/_msearch", NDJSON))
    assert message.startswith(f"cannot reach Elasticsearch at http://127.0.0.1:{stand_in.port} (")
    assert message.endswith("; if it speaks HTTPS, add use_ssl:true (and ca_certs) to the client options")


def test_tls_failures_name_the_ca_or_the_host_name_and_the_right_ca_works(secured, certs, other_certs):
    _, stand_in = secured
    for untrusted in ["use_ssl:true", https(other_certs.ca_cert)]:  # the system's CAs, another CA
        cluster = Cluster(f"127.0.0.1:{stand_in.port}", f"{untrusted},{basic_auth(ADMIN)}")
        assert exit_message(cluster, lambda: cluster.post("/_msearch", NDJSON)) == (
            f"TLS to {stand_in.url} failed (certificate verify failed: unable to get local issuer certificate): give the CA that "
            "signed the cluster's certificate as ca_certs in the client options, or verify_certs:false to skip verification"
        )
    # 127.1 is 127.0.0.1 to the resolver, but a host name the certificate (127.0.0.1, localhost) does not name
    wrong_name = Cluster(f"127.1:{stand_in.port}", https(certs.ca_cert, basic_auth(ADMIN)))
    message = exit_message(wrong_name, lambda: wrong_name.post("/_msearch", NDJSON))
    assert message.startswith(f"TLS to https://127.1:{stand_in.port} failed (certificate verify failed: Hostname mismatch")
    for host in ["127.0.0.1", "localhost"]:
        for options in [https(certs.ca_cert), "use_ssl:true,verify_certs:false"]:
            assert "responses" in Cluster(f"{host}:{stand_in.port}", f"{options},{basic_auth(ADMIN)}").post("/_msearch", NDJSON)


def test_https_to_a_plain_http_port_says_to_drop_use_ssl():
    with LoopbackElasticsearch() as es:
        cluster = Cluster(f"127.0.0.1:{es.port}", "use_ssl:true,verify_certs:false")
        message = exit_message(cluster, lambda: cluster.post("/_msearch", NDJSON))
    assert message.startswith(f"TLS to https://127.0.0.1:{es.port} failed (")
    assert message.endswith("): if it speaks plain HTTP, drop use_ssl from the client options")
