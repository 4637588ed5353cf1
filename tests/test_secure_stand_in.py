"""The secured stand-in (tests/secure_stand_in.py) without Elasticsearch: in front of a tiny plain-HTTP upstream that
echoes what reached it, so that each test sees both what the client got and what the node would have got."""

import base64
import gzip
import http.client
import json
import socket
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.secure_stand_in import ADMIN, ADMIN_API_KEY, DEFAULT_IDENTITIES, RESTRICTED, WWW_AUTHENTICATE, Identity, SecuredStandIn


class EchoUpstream:
    """Answers every request with JSON of its method, path, headers and body (base64), gzip'd if asked; /status/<n>
    answers n. Keeps what it received and the exact bytes it sent, and counts its connections."""

    def __init__(self):
        self.received, self.sent, self.connections = [], [], 0
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # as Elasticsearch (else each answer waits on the stand-in's delayed ACK)

            def log_message(self, *args):
                pass

            def setup(self):
                super().setup()
                upstream.connections += 1

            def _echo(self):
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                seen = {
                    "method": self.command,
                    "path": self.path,
                    "headers": list(self.headers.items()),
                    "body": base64.b64encode(body).decode(),
                }
                upstream.received.append(seen)
                status = int(self.path.split("/")[2]) if self.path.startswith("/status/") else 200
                data, encoding = json.dumps(seen).encode(), None
                if "gzip" in self.headers.get("accept-encoding", ""):
                    data, encoding = gzip.compress(data, mtime=0), "gzip"
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("X-elastic-product", "Elasticsearch")
                self.send_header("Warning", '299 Elasticsearch-8.0.0 "from the echo"')
                if encoding:
                    self.send_header("content-encoding", encoding)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    upstream.sent.append(data)  # before the client can read it
                    self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _echo

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def upstream():
    echo = EchoUpstream()
    yield echo
    echo.close()


@pytest.fixture
def stand_in(upstream, certs):
    with SecuredStandIn(upstream.port, certs) as running:
        yield running


def connect(stand_in, cafile):
    return http.client.HTTPSConnection("127.0.0.1", stand_in.port, context=ssl.create_default_context(cafile=str(cafile)), timeout=5)


def call(connection, method, path, body=None, identity=None, headers=None):
    headers = dict(headers or {})
    if identity:
        headers["Authorization"] = identity.authorization
    connection.request(method, path, body=body, headers=headers)
    response = connection.getresponse()
    return response.status, response.headers, response.read()


@pytest.fixture
def client(stand_in, certs):
    connection = connect(stand_in, certs.ca_cert)
    yield connection
    connection.close()


def test_tls_is_verified_with_the_test_ca_for_127_0_0_1_and_localhost(stand_in, certs):
    context = ssl.create_default_context(cafile=str(certs.ca_cert))
    for name in ("127.0.0.1", "localhost"):
        with context.wrap_socket(socket.create_connection(("127.0.0.1", stand_in.port)), server_hostname=name) as tls:
            assert ("IP Address", "127.0.0.1") in tls.getpeercert()["subjectAltName"]
            assert ("DNS", "localhost") in tls.getpeercert()["subjectAltName"]
    with pytest.raises(ssl.SSLCertVerificationError, match="Hostname mismatch"):
        context.wrap_socket(socket.create_connection(("127.0.0.1", stand_in.port)), server_hostname="example.com")
    assert stand_in.url == f"https://127.0.0.1:{stand_in.port}"


def test_tls_is_rejected_with_an_unrelated_ca_and_the_stand_in_serves_on(stand_in, certs, other_certs):
    rejected = connect(stand_in, other_certs.ca_cert)
    with pytest.raises(ssl.SSLCertVerificationError, match="unable to get local issuer certificate"):
        call(rejected, "GET", "/", identity=ADMIN)
    rejected.close()
    with pytest.raises(ssl.SSLCertVerificationError):  # and a plain default context (system CAs) does not trust it either
        ssl.create_default_context().wrap_socket(socket.create_connection(("127.0.0.1", stand_in.port)), server_hostname="127.0.0.1")
    accepted = connect(stand_in, certs.ca_cert)
    assert call(accepted, "GET", "/", identity=ADMIN)[0] == 200
    accepted.close()
    assert stand_in.counters()["requests"] == 1


@pytest.mark.parametrize("identity", [ADMIN, ADMIN_API_KEY, RESTRICTED], ids=lambda i: i.label)
def test_authenticated_requests_reach_the_node_unchanged_but_for_authorization(stand_in, client, upstream, identity):
    body = b'{"query":{"match_all":{}}}'
    headers = {
        "content-type": "application/json",
        "X-Opaque-Id": "probe-7",
        "accept": "application/vnd.elasticsearch+json; compatible-with=8",
    }
    status, answer_headers, data = call(client, "POST", "/cluster-metrics/_search?size=0&request_cache=false", body, identity, headers)
    assert status == 200
    seen = json.loads(data)
    assert (seen["method"], seen["path"], base64.b64decode(seen["body"])) == (
        "POST",
        "/cluster-metrics/_search?size=0&request_cache=false",
        body,
    )
    forwarded = {k.lower(): v for k, v in seen["headers"]}
    assert "authorization" not in forwarded
    assert forwarded["content-type"] == "application/json" and forwarded["x-opaque-id"] == "probe-7"
    assert forwarded["accept"] == headers["accept"] and forwarded["content-length"] == str(len(body))
    assert answer_headers["X-elastic-product"] == "Elasticsearch" and answer_headers["Warning"] == '299 Elasticsearch-8.0.0 "from the echo"'
    assert answer_headers["content-length"] == str(len(data))
    assert stand_in.log == [(identity.label, "POST", "/cluster-metrics/_search?size=0&request_cache=false", 200)]


def missing(path):
    cause = {
        "type": "security_exception",
        "reason": f"missing authentication credentials for REST request [{path}]",
        "header": {"WWW-Authenticate": ['Basic realm="security" charset="UTF-8"', "ApiKey"]},
    }
    return {"error": {"root_cause": [cause], **cause}, "status": 401}


@pytest.mark.parametrize("authorization", [None, "Bearer some-token", "Basic "], ids=["none", "bearer", "empty"])
def test_missing_credentials_get_elasticsearchs_401(stand_in, client, upstream, authorization):
    headers = {"Authorization": authorization} if authorization else {}
    status, headers, data = call(client, "GET", "/_cluster/health?wait_for_status=green", headers=headers)
    assert status == 401
    assert json.loads(data) == missing("/_cluster/health?wait_for_status=green")
    assert headers.get_all("WWW-Authenticate") == WWW_AUTHENTICATE == ['Basic realm="security" charset="UTF-8"', "ApiKey"]
    assert headers["X-elastic-product"] == "Elasticsearch" and headers["content-type"] == "application/json"
    assert upstream.received == []
    assert stand_in.log == [(None, "GET", "/_cluster/health?wait_for_status=green", 401)]


def test_wrong_credentials_get_elasticsearchs_401(stand_in, client, upstream):
    wrong_password = Identity("restricted", password="not-the-password")
    unknown_user = Identity("mallory", password=RESTRICTED.password)
    wrong_key = Identity("elastic", api_key_id=ADMIN_API_KEY.api_key_id, api_key="not-the-key")
    unknown_key = Identity("elastic", api_key_id="no-such-key", api_key=ADMIN_API_KEY.api_key)
    reasons = {}
    for identity in (wrong_password, unknown_user, wrong_key, unknown_key):
        status, headers, data = call(client, "GET", "/", identity=identity)
        assert status == 401 and headers.get_all("WWW-Authenticate") == WWW_AUTHENTICATE
        error = json.loads(data)["error"]
        assert error["type"] == "security_exception" and error["root_cause"][0] == {k: v for k, v in error.items() if k != "root_cause"}
        assert error["header"] == {"WWW-Authenticate": WWW_AUTHENTICATE}
        reasons[identity.label] = (error["reason"], error.get("additional_unsuccessful_credentials"))
    anonymous = "unable to authenticate with provided credentials and anonymous access is not allowed for this request"
    assert reasons == {
        "restricted": ("unable to authenticate user [restricted] for REST request [/]", None),
        "mallory": ("unable to authenticate user [mallory] for REST request [/]", None),
        "api_key:stand-in-admin-key": (anonymous, "API key: invalid credentials for API key [stand-in-admin-key]"),
        "api_key:no-such-key": (anonymous, "API key: unable to find apikey with id no-such-key"),
    }
    assert upstream.received == []
    assert stand_in.counters() == {"requests": 4, "with_credentials": 4, "per_identity": {}}


def test_the_restricted_identity_lacks_cluster_manage_and_other_indices(stand_in, client, upstream):
    settings = b'{"persistent":{"search.max_buckets":70000}}'
    status, headers, data = call(client, "PUT", "/_cluster/settings", settings, RESTRICTED, {"content-type": "application/json"})
    assert status == 403 and headers["X-elastic-product"] == "Elasticsearch"
    reason = (
        "action [cluster:admin/settings/update] is unauthorized for user [restricted] with effective roles [metrics_reader], "
        "this action is granted by the cluster privileges [manage,all]"
    )
    cause = {"type": "security_exception", "reason": reason}
    assert json.loads(data) == {"error": {"root_cause": [cause], **cause}, "status": 403}
    status, _, data = call(client, "PUT", "/other-index", b"{}", RESTRICTED, {"content-type": "application/json"})
    assert status == 403
    assert json.loads(data)["error"]["reason"] == (
        "action [indices:admin/create] is unauthorized for user [restricted] with effective roles [metrics_reader] on indices "
        "[other-index], this action is granted by the index privileges [create_index,manage,all]"
    )
    assert call(client, "DELETE", "/cluster-metrics,other-index", identity=RESTRICTED)[0] == 403
    assert upstream.received == []
    # what it may do reaches the node: reading cluster settings (monitor), its own indices; the admin may do everything
    assert call(client, "GET", "/_cluster/settings?flat_settings=true", identity=RESTRICTED)[0] == 200
    assert call(client, "PUT", "/cluster-metrics-altered", b"{}", RESTRICTED, {"content-type": "application/json"})[0] == 200
    assert call(client, "PUT", "/pristine-cluster-metrics", b"{}", RESTRICTED, {"content-type": "application/json"})[0] == 200
    assert call(client, "DELETE", "/cluster-metrics-altered", identity=RESTRICTED)[0] == 200
    assert call(client, "PUT", "/_cluster/settings", settings, ADMIN, {"content-type": "application/json"})[0] == 200
    assert call(client, "PUT", "/other-index", b"{}", ADMIN_API_KEY, {"content-type": "application/json"})[0] == 200
    assert [(r["method"], r["path"]) for r in upstream.received] == [
        ("GET", "/_cluster/settings?flat_settings=true"),
        ("PUT", "/cluster-metrics-altered"),
        ("PUT", "/pristine-cluster-metrics"),
        ("DELETE", "/cluster-metrics-altered"),
        ("PUT", "/_cluster/settings"),
        ("PUT", "/other-index"),
    ]
    assert base64.b64decode(upstream.received[4]["body"]) == settings


def test_an_api_key_denial_names_the_key_and_its_owner(upstream, certs):
    key = Identity("ingest", api_key_id="k1", api_key="s1", cluster=["monitor"], indices=[(["logs-*"], ["write"])])
    with SecuredStandIn(upstream.port, certs, [key]) as stand_in:
        connection = connect(stand_in, certs.ca_cert)
        status, _, data = call(connection, "PUT", "/_cluster/settings", b"{}", key, {"content-type": "application/json"})
        connection.close()
    assert status == 403
    assert json.loads(data)["error"]["reason"] == (
        "action [cluster:admin/settings/update] is unauthorized for API key id [k1] of user [ingest], "
        "this action is granted by the cluster privileges [manage,all]"
    )


def test_authenticate_answers_like_elasticsearch(stand_in, client, upstream):
    answers = {i.label: json.loads(call(client, "GET", "/_security/_authenticate", identity=i)[2]) for i in DEFAULT_IDENTITIES}
    native, key = {"name": "default_native", "type": "native"}, {"name": "_es_api_key", "type": "_es_api_key"}
    common = {"full_name": None, "email": None, "metadata": {}, "enabled": True}
    assert answers == {
        "elastic": {
            "username": "elastic",
            "roles": ["superuser"],
            **common,
            "authentication_realm": native,
            "lookup_realm": native,
            "authentication_type": "realm",
        },
        "api_key:stand-in-admin-key": {
            "username": "elastic",
            "roles": [],
            **common,
            "authentication_realm": key,
            "lookup_realm": key,
            "api_key": {"id": "stand-in-admin-key", "name": "elastic-stand-in-key"},
            "authentication_type": "api_key",
        },
        "restricted": {
            "username": "restricted",
            "roles": ["metrics_reader"],
            **common,
            "authentication_realm": native,
            "lookup_realm": native,
            "authentication_type": "realm",
        },
    }
    assert upstream.received == []
    assert call(client, "GET", "/_security/_authenticate")[0] == 401


def has_privileges(client, identity, request, method="POST", headers=None):
    headers = {"content-type": "application/json", **(headers or {})}
    body = request if isinstance(request, bytes) else json.dumps(request).encode()
    status, _, data = call(client, method, "/_security/user/_has_privileges", body, identity, headers)
    return status, json.loads(data)


def test_has_privileges_of_the_restricted_and_the_admin(stand_in, client, upstream):
    request = {"cluster": ["manage", "monitor"], "index": [{"names": ["cluster-metrics", "other-index"], "privileges": ["all", "read"]}]}
    assert has_privileges(client, RESTRICTED, request) == (
        200,
        {
            "username": "restricted",
            "has_all_requested": False,
            "cluster": {"manage": False, "monitor": True},
            "index": {"cluster-metrics": {"all": True, "read": True}, "other-index": {"all": False, "read": False}},
            "application": {},
        },
    )
    mine = {"cluster": ["monitor"], "index": [{"names": ["cluster-metrics-altered", "pristine-cluster-metrics"], "privileges": ["all"]}]}
    assert has_privileges(client, RESTRICTED, mine, method="GET")[1]["has_all_requested"] is True
    for admin in (ADMIN, ADMIN_API_KEY):
        status, answer = has_privileges(client, admin, request)
        assert status == 200 and answer["has_all_requested"] is True and answer["username"] == "elastic"
        assert answer["cluster"] == {"manage": True, "monitor": True}
    compressed = gzip.compress(json.dumps(request).encode())
    assert has_privileges(client, RESTRICTED, compressed, headers={"content-encoding": "gzip"})[1]["cluster"] == {
        "manage": False,
        "monitor": True,
    }
    assert upstream.received == []


def test_has_privileges_follows_elasticsearchs_implications(upstream, certs):
    ops = Identity("ops", password="ops-password", roles=["ops"], cluster=["manage"], indices=[(["logs-*"], ["manage", "write"])])
    cluster = [
        "monitor",
        "manage",
        "all",
        "manage_security",
        "create_snapshot",
        "cluster:monitor/nodes/stats",
        "cluster:admin/xpack/security/user/put",
    ]
    index = [
        "monitor",
        "view_index_metadata",
        "create_index",
        "delete_index",
        "maintenance",
        "write",
        "index",
        "create",
        "create_doc",
        "delete",
    ]
    index += ["read", "all"]
    with SecuredStandIn(upstream.port, certs, [ops]) as stand_in:
        connection = connect(stand_in, certs.ca_cert)
        status, answer = has_privileges(
            connection, ops, {"cluster": cluster, "index": [{"names": ["logs-1", "metrics-1"], "privileges": index}]}
        )
        connection.close()
    assert status == 200
    assert [p for p, granted in answer["cluster"].items() if granted] == [
        "monitor",
        "manage",
        "create_snapshot",
        "cluster:monitor/nodes/stats",
    ]
    assert [p for p, granted in answer["index"]["logs-1"].items() if not granted] == ["read", "all"]
    assert not any(answer["index"]["metrics-1"].values())


def test_unknown_privileges_are_refused_like_elasticsearch(stand_in, client):
    status, answer = has_privileges(client, ADMIN, {"cluster": ["mange"]})
    assert status == 400 and answer["status"] == 400
    assert answer["error"]["type"] == answer["error"]["root_cause"][0]["type"] == "illegal_argument_exception"
    assert answer["error"]["reason"].startswith(
        "unknown cluster privilege [mange]. a privilege must be either one of the predefined cluster privilege names ["
    )
    status, answer = has_privileges(client, ADMIN, {"index": [{"names": ["x"], "privileges": ["reed"]}]})
    assert status == 400 and answer["error"]["reason"].startswith("unknown index privilege [reed]. a privilege must be either one of")
    with pytest.raises(ValueError, match=r"unknown index privilege \[raed\]"):
        Identity("typo", password="p", indices=[(["*"], ["raed"])])
    with pytest.raises(ValueError, match="either a password or an API key"):
        Identity("both", password="p", api_key_id="i", api_key="k")


def test_one_connection_carries_many_requests_and_reuses_its_upstream_connection(stand_in, client, upstream):
    statuses, started = [], time.monotonic()
    for i in range(30):
        identity = (ADMIN, ADMIN_API_KEY, RESTRICTED, None)[i % 4]
        path = "/status/404" if i % 5 == 0 else f"/cluster-metrics/_doc/{i}"
        statuses.append(call(client, "GET", path, identity=identity)[0])
        if i == 0:
            first_socket = client.sock
        assert client.sock is first_socket  # http.client would have opened a new socket had the stand-in closed this one
    # a few ms each: no Nagle-delayed-ACK stall (40 ms an answer, which would also distort the latencies Rally measures)
    assert time.monotonic() - started < 0.6
    assert statuses == [401 if i % 4 == 3 else 404 if i % 5 == 0 else 200 for i in range(30)]
    assert upstream.connections == 1 and len(upstream.received) == statuses.count(200) + statuses.count(404)


def test_gzipped_bodies_pass_through_byte_for_byte(stand_in, client, upstream):
    plain = json.dumps({"query": {"term": {"cluster": "c-1"}}, "size": 0}).encode()
    compressed = gzip.compress(plain, mtime=0)
    headers = {"content-type": "application/json", "content-encoding": "gzip", "accept-encoding": "gzip,deflate"}
    status, answer_headers, data = call(client, "POST", "/cluster-metrics/_search", compressed, ADMIN, headers)
    assert status == 200
    assert data == upstream.sent[-1] and data[:2] == b"\x1f\x8b"  # the node's gzip'd bytes, not re-encoded
    assert answer_headers["content-encoding"] == "gzip" and answer_headers["content-length"] == str(len(data))
    seen = json.loads(gzip.decompress(data))
    assert base64.b64decode(seen["body"]) == compressed
    forwarded = {k.lower(): v for k, v in seen["headers"]}
    assert forwarded["content-encoding"] == "gzip" and forwarded["accept-encoding"] == "gzip,deflate"
    # and a plain answer when not asked for gzip, on the same connection
    status, answer_headers, data = call(client, "GET", "/", identity=ADMIN)
    assert status == 200 and "content-encoding" not in answer_headers and json.loads(data)["path"] == "/"


def test_head_has_no_body_and_keeps_the_connection_usable(stand_in, client, upstream):
    status, headers, data = call(client, "HEAD", "/cluster-metrics", identity=RESTRICTED)
    assert status == 200 and data == b""
    assert int(headers["content-length"]) > 0  # the node's length of the body a GET would get
    status, headers, data = call(client, "HEAD", "/cluster-metrics")
    assert status == 401 and data == b""
    status, _, data = call(client, "GET", "/after-head", identity=RESTRICTED)
    assert status == 200 and json.loads(data)["path"] == "/after-head"
    assert [r["method"] for r in upstream.received] == ["HEAD", "GET"]


def test_log_and_counters(stand_in, client):
    call(client, "GET", "/", identity=ADMIN)
    call(client, "GET", "/_cluster/health")
    call(client, "GET", "/", identity=Identity("elastic", password="wrong"))
    call(client, "PUT", "/_cluster/settings", b"{}", RESTRICTED, {"content-type": "application/json"})
    call(client, "GET", "/_security/_authenticate", identity=ADMIN_API_KEY)
    call(client, "GET", "/status/503", identity=RESTRICTED)
    assert stand_in.log == [
        ("elastic", "GET", "/", 200),
        (None, "GET", "/_cluster/health", 401),
        (None, "GET", "/", 401),
        ("restricted", "PUT", "/_cluster/settings", 403),
        ("api_key:stand-in-admin-key", "GET", "/_security/_authenticate", 200),
        ("restricted", "GET", "/status/503", 503),
    ]
    assert stand_in.log[0].identity == "elastic" and stand_in.log[5].status == 503
    assert stand_in.counters() == {
        "requests": 6,
        "with_credentials": 5,
        "per_identity": {"elastic": 1, "restricted": 2, "api_key:stand-in-admin-key": 1},
    }


def test_concurrent_connections(stand_in, certs, upstream):
    statuses, lock = [], threading.Lock()

    def worker(n):
        connection = connect(stand_in, certs.ca_cert)
        for i in range(10):
            status = call(connection, "GET", f"/cluster-metrics/_doc/{n}-{i}", identity=(ADMIN, RESTRICTED)[n % 2])[0]
            with lock:
                statuses.append(status)
        connection.close()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert statuses == [200] * 80 and len(upstream.received) == 80 and upstream.connections == 8
    assert stand_in.counters()["per_identity"] == {"elastic": 40, "restricted": 40}


def test_stop_closes_the_listening_socket_and_open_connections_quickly(upstream, certs):
    stand_in = SecuredStandIn(upstream.port, certs).start()
    port = stand_in.port
    connection = connect(stand_in, certs.ca_cert)
    assert call(connection, "GET", "/", identity=ADMIN)[0] == 200
    started = time.monotonic()
    stand_in.stop()
    assert time.monotonic() - started < 1
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=1)
    connection.auto_open = 0  # no silent reconnection: the kept-alive connection itself must be gone
    with pytest.raises((http.client.HTTPException, OSError)):
        call(connection, "GET", "/", identity=ADMIN)
    connection.close()
    stand_in.stop()  # twice is harmless
