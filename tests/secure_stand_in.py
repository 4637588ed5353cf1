"""A stand-in for a secured Elasticsearch 8 cluster: an HTTPS server on loopback that authenticates and authorizes
every request the way Elasticsearch's security does and forwards the allowed ones, unchanged, to the plain-HTTP test
node (built from Maven jars, without x-pack, so without security). It lets the tests prove that the track works
against a cluster with TLS, users, roles and API keys, and fails the way it should when it lacks a privilege.

- TLS: `make_ca(folder)` makes a test CA and a server certificate for 127.0.0.1 and localhost with the `openssl` CLI;
  another call (another `name`) makes an unrelated CA, one the client does not trust.
- Authentication: `Authorization: Basic base64(user:password)` or `Authorization: ApiKey base64(id:api_key)` against
  the declared `Identity`s; a missing or wrong credential gets Elasticsearch's 401 (body and WWW-Authenticate).
  Another scheme (Bearer...) counts as no credentials: this stand-in has no token service.
- Authorization: one table, `ACTIONS` (method and path -> Elasticsearch action name, cluster or index), and the
  privileges as Elasticsearch defines them, as sets of action patterns (`CLUSTER_PRIVILEGES`, `INDEX_PRIVILEGES`);
  a privilege grants an action its patterns match, and implies another privilege whose patterns it covers (so index
  `manage` implies `monitor`, `view_index_metadata`, `create_index`, `delete_index` and `maintenance`; `write` implies
  `index`, `create`, `create_doc` and `delete`; cluster `manage` implies `monitor` but not `manage_security`). A denied
  request gets Elasticsearch's 403. It models only what the tests need: a request the table does not know is allowed
  for any authenticated identity (a real cluster would still check it, e.g. a search on an index outside the roles),
  only the privileges listed are known (a real cluster knows more), and index names are matched literally or with
  fnmatch (no wildcard expansion against the cluster's indices, no aliases, no regular expressions).
- Security API: `GET /_security/_authenticate` and `GET|POST /_security/user/_has_privileges` are answered here; any
  other /_security/ request, once authorized, goes to the node, which has no handler for it.

Forwarding keeps the request's method, path, body bytes and headers (content-type, content-encoding, accept,
accept-encoding...) except Authorization and the hop-by-hop ones, and answers with the node's status, headers and body
bytes (gzip'd if the node gzip'd them) with a content-length of its own. One connection to the node per client
connection, both kept alive. The stand-in's own answers are not gzip'd: a real Elasticsearch 8 with HTTPS does not
compress by default (`http.compression` is false once TLS is on)."""

import base64
import collections
import dataclasses
import gzip
import hmac
import http.client
import json
import secrets
import socket
import ssl
import subprocess
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from tests.stand_in_privileges import (  # noqa: F401 (the tests import authorize from here)
    ACTIONS,
    CLUSTER_PRIVILEGES,
    INDEX_PRIVILEGES,
    _privilege,
    _Unknown,
    authorize,
    grants,
    has_privileges,
    implies,
)

# ---------------------------------------------------------------------------------------------------------------- TLS

Certs = collections.namedtuple("Certs", "ca_cert server_cert server_key ca_key")

_OPENSSL_CONFIG = """\
[req]
distinguished_name = dn
prompt = no
[dn]
CN = unused
[ca_ext]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[server_ext]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1, DNS:localhost
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always
"""


def _openssl(*args, cwd):
    done = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")


def make_ca(folder, name="stand-in-test-ca", days=30):
    """A test CA (EC P-256 key and self-signed certificate) and a server certificate for 127.0.0.1 and localhost
    signed by it, as PEM files `<name>.crt`, `<name>.key`, `<name>-server.crt`, `<name>-server.key` in `folder`.
    Another name gives an unrelated CA (see `make_other_ca`)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / f"{name}-openssl.cnf"
    config.write_text(_OPENSSL_CONFIG)
    certs = Certs(folder / f"{name}.crt", folder / f"{name}-server.crt", folder / f"{name}-server.key", folder / f"{name}.key")
    csr = folder / f"{name}-server.csr"
    ec, days = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"), str(days)
    ca = ["req", "-x509", *ec, "-config", config, "-extensions", "ca_ext", "-subj", f"/CN={name}", "-days", days]
    _openssl(*ca, "-keyout", certs.ca_key, "-out", certs.ca_cert, cwd=folder)
    _openssl("req", "-new", *ec, "-config", config, "-subj", "/CN=127.0.0.1", "-keyout", certs.server_key, "-out", csr, cwd=folder)
    serial = str(secrets.randbits(62))
    sign = ["x509", "-req", "-in", csr, "-CA", certs.ca_cert, "-CAkey", certs.ca_key, "-set_serial", serial, "-days", days]
    _openssl(*sign, "-extfile", config, "-extensions", "server_ext", "-out", certs.server_cert, cwd=folder)
    csr.unlink()
    return certs


def make_other_ca(folder):
    """A CA unrelated to `make_ca`'s, with its own server certificate: a client trusting the first must reject it."""
    return make_ca(folder, name="unrelated-test-ca")


# ------------------------------------------------------------------------------------------------------- identities


@dataclasses.dataclass(frozen=True)
class Identity:
    """A user (`password`) or an API key (`api_key_id` and `api_key`) owned by user `name`, with the privileges of its
    roles: `cluster` privilege names, `indices` as (index name patterns, privilege names) pairs."""

    name: str
    password: str = None
    api_key_id: str = None
    api_key: str = None
    roles: tuple = ()
    cluster: tuple = ()
    indices: tuple = ()

    def __post_init__(self):
        if (self.password is None) == (self.api_key_id is None or self.api_key is None):
            raise ValueError(f"identity {self.name}: either a password or an API key (id and key), not both")
        object.__setattr__(self, "roles", tuple(self.roles))
        object.__setattr__(self, "cluster", tuple(self.cluster))
        object.__setattr__(self, "indices", tuple((tuple(names), tuple(privileges)) for names, privileges in self.indices))
        for privilege in self.cluster:
            _privilege(CLUSTER_PRIVILEGES, "cluster", privilege)
        for _, privileges in self.indices:
            for privilege in privileges:
                _privilege(INDEX_PRIVILEGES, "index", privilege)

    @property
    def is_api_key(self):
        return self.api_key_id is not None

    @property
    def label(self):
        """How the log and the counters name it: the user name, or `api_key:<id>`."""
        return f"api_key:{self.api_key_id}" if self.is_api_key else self.name

    @property
    def encoded_api_key(self):
        """base64(id:api_key), what elasticsearch-py's `api_key` option takes."""
        return base64.b64encode(f"{self.api_key_id}:{self.api_key}".encode()).decode()

    @property
    def authorization(self):
        """The value of the Authorization header that authenticates as this identity."""
        if self.is_api_key:
            return f"ApiKey {self.encoded_api_key}"
        return "Basic " + base64.b64encode(f"{self.name}:{self.password}".encode()).decode()


ADMIN = Identity("elastic", password="stand-in-elastic-password", roles=["superuser"], cluster=["all"], indices=[(["*"], ["all"])])
ADMIN_API_KEY = Identity(
    "elastic", api_key_id="stand-in-admin-key", api_key="stand-in-admin-key-secret", cluster=["all"], indices=[(["*"], ["all"])]
)
RESTRICTED = Identity(
    "restricted",
    password="stand-in-restricted-password",
    roles=["metrics_reader"],
    cluster=["monitor"],
    indices=[(["cluster-metrics*", "pristine-cluster-metrics"], ["all"])],
)
DEFAULT_IDENTITIES = (ADMIN, ADMIN_API_KEY, RESTRICTED)

# ------------------------------------------------------------------------------------------------------ the answers

WWW_AUTHENTICATE = ['Basic realm="security" charset="UTF-8"', "ApiKey"]


def _error(kind, reason, status, **extra):
    cause = {"type": kind, "reason": reason, **extra}
    return {"error": {"root_cause": [cause], **cause}, "status": status}


def unauthenticated(reason, **extra):
    return _error("security_exception", reason, 401, **extra, header={"WWW-Authenticate": WWW_AUTHENTICATE})


def authenticate_answer(identity):
    realm = {"name": "_es_api_key", "type": "_es_api_key"} if identity.is_api_key else {"name": "default_native", "type": "native"}
    answer = {
        "username": identity.name,
        "roles": [] if identity.is_api_key else list(identity.roles),
        "full_name": None,
        "email": None,
        "metadata": {},
        "enabled": True,
        "authentication_realm": realm,
        "lookup_realm": realm,
        "authentication_type": "api_key" if identity.is_api_key else "realm",
    }
    if identity.is_api_key:
        answer["api_key"] = {"id": identity.api_key_id, "name": f"{identity.name}-stand-in-key"}
    return answer


LogEntry = collections.namedtuple("LogEntry", "identity method path status")

_HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "content-length",
}


class SecuredStandIn:
    """HTTPS on 127.0.0.1:`port` (0: any free one) in front of the plain-HTTP node on 127.0.0.1:`upstream_port`, with
    the TLS files of `certs` (from `make_ca`) and the `identities` it knows. A context manager; `start()` / `stop()`."""

    def __init__(self, upstream_port, certs, identities=DEFAULT_IDENTITIES, port=0):
        self.upstream_port, self.certs, self.requested_port = upstream_port, certs, port
        self.identities = tuple(identities)
        self.users = {i.name: i for i in self.identities if not i.is_api_key}
        self.api_keys = {i.api_key_id: i for i in self.identities if i.is_api_key}
        self.port = self.url = self.server = None
        self._lock = threading.Lock()
        self._log = []
        self.requests = self.with_credentials = 0
        self.per_identity = collections.Counter()
        self._connections = set()

    # -- bookkeeping, thread-safe

    @property
    def log(self):
        """(identity label or None, method, path, status) of every request, in order."""
        with self._lock:
            return list(self._log)

    def counters(self):
        with self._lock:
            return {"requests": self.requests, "with_credentials": self.with_credentials, "per_identity": dict(self.per_identity)}

    def _count(self, credentials):
        with self._lock:
            self.requests += 1
            self.with_credentials += credentials

    def _record(self, identity, method, path, status):
        with self._lock:
            self._log.append(LogEntry(identity and identity.label, method, path, status))
            if identity:
                self.per_identity[identity.label] += 1

    # -- authentication

    def authenticate(self, header, path):
        """(identity, None) or (None, the 401 answer) for the Authorization header `header` of a request for `path`."""
        scheme, _, token = (header or "").strip().partition(" ")
        scheme = scheme.lower()
        if scheme not in ("basic", "apikey") or not token.strip():
            return None, unauthenticated(f"missing authentication credentials for REST request [{path}]")
        try:
            first, colon, second = base64.b64decode(token.strip(), validate=True).decode().partition(":")
        except (ValueError, UnicodeDecodeError):
            first = colon = second = ""
        if scheme == "basic":
            if not colon:
                return None, unauthenticated("invalid basic authentication header value")
            identity = self.users.get(first)
            if identity and hmac.compare_digest(identity.password.encode(), second.encode()):
                return identity, None
            return None, unauthenticated(f"unable to authenticate user [{first}] for REST request [{path}]")
        if not colon:
            return None, unauthenticated("invalid ApiKey value")
        identity = self.api_keys.get(first)
        if identity and hmac.compare_digest(identity.api_key.encode(), second.encode()):
            return identity, None
        why = f"invalid credentials for API key [{first}]" if identity else f"unable to find apikey with id {first}"
        return None, unauthenticated(
            "unable to authenticate with provided credentials and anonymous access is not allowed for this request",
            additional_unsuccessful_credentials=f"API key: {why}",
        )

    # -- serving

    def start(self):
        stand_in = self
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(self.certs.server_cert, self.certs.server_key)

        class Server(ThreadingHTTPServer):
            request_queue_size = 128

            def finish_request(self, request, client_address):
                # the TLS handshake in the connection's own thread, so that a slow or failing client blocks no other
                request.settimeout(30)
                try:
                    tls = context.wrap_socket(request, server_side=True)
                except (ssl.SSLError, OSError):
                    return
                tls.settimeout(None)
                with stand_in._lock:
                    stand_in._connections.add(tls)
                try:
                    self.RequestHandlerClass(tls, client_address, self)
                except (ssl.SSLError, OSError):
                    pass
                finally:
                    with stand_in._lock:
                        stand_in._connections.discard(tls)
                    tls.close()

        self.server = Server(("127.0.0.1", self.requested_port), _handler(self))
        self.port = self.server.server_address[1]
        self.url = f"https://127.0.0.1:{self.port}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def stop(self):
        """Closes the listening socket and every open connection."""
        if self.server is None:
            return
        self.server.shutdown()
        self.server.server_close()
        self.server = None
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def _read_body(handler):
    if "chunked" in handler.headers.get("transfer-encoding", "").lower():
        chunks = []
        while True:
            size = int(handler.rfile.readline().split(b";")[0].strip(), 16)
            if size == 0:
                while handler.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass
                return b"".join(chunks)
            chunks.append(handler.rfile.read(size))
            handler.rfile.readline()
    return handler.rfile.read(int(handler.headers.get("content-length") or 0))


def _handler(stand_in):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True
        upstream = None

        def log_message(self, *args):
            pass

        def finish(self):
            if self.upstream is not None:
                self.upstream.close()
            super().finish()

        def handle_request(self):
            body = _read_body(self)
            header = self.headers.get("authorization")
            stand_in._count(header is not None)
            identity, failure = stand_in.authenticate(header, self.path)
            if failure:
                return self._answer(None, failure)
            route = urllib.parse.urlsplit(self.path).path.rstrip("/")
            if route == "/_security/_authenticate" and self.command == "GET":
                return self._answer(identity, {"status": 200, **authenticate_answer(identity)})
            if route == "/_security/user/_has_privileges" and self.command in ("GET", "POST"):
                return self._has_privileges(identity, body)
            reason = authorize(identity, self.command, self.path)
            if reason:
                return self._answer(identity, _error("security_exception", reason, 403))
            self._forward(identity, body)

        do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = do_OPTIONS = handle_request

        def _has_privileges(self, identity, body):
            try:
                if "gzip" in self.headers.get("content-encoding", "").lower():
                    body = gzip.decompress(body)
                request = json.loads(body or b"{}")
                return self._answer(identity, {"status": 200, **has_privileges(identity, request)})
            except _Unknown as e:
                return self._answer(identity, _error("illegal_argument_exception", str(e), 400))
            except (ValueError, KeyError, TypeError, OSError) as e:
                return self._answer(identity, _error("parse_exception", f"failed to parse privileges check: {e}", 400))

        def _answer(self, identity, answer):
            """One of the stand-in's own JSON answers; `answer["status"]` is the HTTP status (and in the body on errors)."""
            status = answer["status"] if "error" in answer else answer.pop("status")
            data = json.dumps(answer, separators=(",", ":")).encode()
            compatible = "vnd.elasticsearch+json" in self.headers.get("accept", "")
            stand_in._record(identity, self.command, self.path, status)  # before the client can see the answer
            self.send_response_only(status)
            if status == 401:
                for value in WWW_AUTHENTICATE:
                    self.send_header("WWW-Authenticate", value)
            self.send_header("X-elastic-product", "Elasticsearch")
            self.send_header("content-type", "application/vnd.elasticsearch+json;compatible-with=8" if compatible else "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        def _upstream_exchange(self, body, headers):
            for attempt in (1, 2):
                reused = self.upstream is not None
                if not reused:
                    self.upstream = http.client.HTTPConnection("127.0.0.1", stand_in.upstream_port, timeout=300)
                    self.upstream.connect()
                    self.upstream.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                try:
                    self.upstream.request(self.command, self.path, body=body or None, headers=headers)
                    response = self.upstream.getresponse()
                    return response, response.read()
                except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                    # a kept-alive connection the node had closed: once more on a new one
                    self.upstream.close()
                    self.upstream = None
                    if not reused or attempt == 2:
                        raise

        def _forward(self, identity, body):
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP | {"host", "authorization"}}
            headers["Host"] = f"127.0.0.1:{stand_in.upstream_port}"
            try:
                response, data = self._upstream_exchange(body, headers)
            except (OSError, http.client.HTTPException) as e:
                if self.upstream is not None:
                    self.upstream.close()
                    self.upstream = None
                return self._answer(identity, {"status": 502, "error": f"the stand-in could not reach the node: {e}"})
            stand_in._record(identity, self.command, self.path, response.status)
            self.send_response_only(response.status, response.reason)
            for key, value in response.getheaders():
                if key.lower() not in _HOP_BY_HOP:
                    self.send_header(key, value)
            upstream_length = response.getheader("content-length")
            self.send_header("content-length", upstream_length if self.command == "HEAD" and upstream_length else str(len(data)))
            if response.will_close:
                self.upstream.close()
                self.upstream = None
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

    return Handler
