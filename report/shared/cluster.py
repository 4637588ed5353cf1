"""The live-cluster tools' one way to reach Elasticsearch (make accuracy, make validation-proof, Rally's metrics
store): the cluster as `esrally race` takes it (--target-hosts, --client-options, parsed by Rally's own code),
reached with Rally's own synchronous client; which ground-truth section the index holds; and `failure`, the one
place that names a failure to reach a cluster, with its address and its fix."""

import contextlib
import dataclasses
import http.client
import os
import re
import ssl

import elastic_transport
import urllib3
from elasticsearch import ApiError, AuthenticationException, AuthorizationException, NotFoundError, UnsupportedProductError
from esrally import exceptions as rally_exceptions
from esrally.client import factory
from esrally.utils import opts

from report import ReportError
from report.shared import rally_compat
from runners.contracts import corpus
from runners.contracts.errors import error_reason

DEFAULT_TARGET_HOSTS = "127.0.0.1:9200"
DEFAULT_CLIENT_OPTIONS = opts.ClientOptions.DEFAULT_CLIENT_OPTIONS


@dataclasses.dataclass(frozen=True)
class Fixes:
    """What is reached and where its user fixes each kind of failure: the words of `failure`'s messages."""

    unreachable: str = "cannot reach Elasticsearch"
    start: str = "start it with make es-start"
    address: str = "--target-hosts"
    settings: str = "--target-hosts / --client-options"
    ca: str = (
        "give the CA that signed the cluster's certificate as ca_certs in the client options, or verify_certs:false to skip verification"
    )
    plain: str = "if it speaks plain HTTP, drop use_ssl from the client options"
    https: str = "if it speaks HTTPS, add use_ssl:true (and ca_certs) to the client options"
    credentials: str = "correct basic_auth_user/basic_auth_password or api_key in the client options"


CLUSTER = Fixes()
_RESETS = (ConnectionResetError, ConnectionAbortedError, BrokenPipeError, http.client.BadStatusLine, urllib3.exceptions.ProtocolError)
_PLAIN_PEER = ("WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "PACKET_LENGTH_TOO_LONG", "HTTP_REQUEST")


def failure(error, address, fixes=CLUSTER, secrets=()):
    """The message naming `error`, a failure to reach or use the cluster at `address` (TLS, 401, 403, unreachable,
    any other answer), with its fix; None when `error` is none of these. No secret of `secrets` appears in it."""
    if isinstance(error, UnsupportedProductError):
        text = f"{address} does not answer as Elasticsearch ({error.message}): correct {fixes.address}"
    elif isinstance(error, AuthenticationException):
        text = f"bad credentials: {address} answered 401 ({error_reason(error)}): {fixes.credentials}"
    elif isinstance(error, AuthorizationException):
        text = f"the identity lacks a privilege: {address} answered 403 ({error_reason(error)})"
    elif isinstance(error, ApiError):
        text = f"{address} answered {error.meta.status} ({error_reason(error)})"
    elif isinstance(error, (elastic_transport.ConnectionError, elastic_transport.ConnectionTimeout)):
        causes = _causes(error)
        reason = _cause_reason(error, causes)
        if any(isinstance(c, (elastic_transport.TlsError, ssl.SSLError, urllib3.exceptions.SSLError)) for c in causes):
            plain_peer = any(mark in str(c) for c in causes for mark in _PLAIN_PEER)
            text = f"TLS to {address} failed ({reason}): {fixes.plain if plain_peer else fixes.ca}"
        else:
            text = f"{fixes.unreachable} at {address} ({reason}): {fixes.start}, or correct {fixes.address}"
            if any(isinstance(c, _RESETS) for c in causes):
                text += f"; {fixes.https}"
    else:
        return None
    return _scrub(text, secrets)


def unusable(error, fixes=CLUSTER, client_options=None):
    """A ReportError naming settings that cannot even make a client (a bad option, a CA file that is not there);
    `client_options`, when known, name the missing files and the secrets kept out of the message."""
    options = client_options or {}
    missing = [str(v) for k in ("ca_certs", "client_cert", "client_key") if (v := options.get(k)) and not os.path.isfile(v)]
    if isinstance(error, OSError) and missing:
        reason = f"no such file: {', '.join(missing)}"
    elif isinstance(error, KeyError):
        reason = f"no {error.args[0]!r} given"
    else:
        reason = f"{type(error).__name__}: {error.message if isinstance(error, rally_exceptions.RallyError) else error}"
    return ReportError(_scrub(f"cannot use {fixes.settings} ({reason})", secrets_of(options)))


def _causes(error):
    """`error` and every exception it wraps (the client's retries, urllib3's and the socket's), depth first."""
    found, stack = [], [error]
    while stack:
        e = stack.pop()
        if any(e is f for f in found):
            continue
        found.append(e)
        inner = [*getattr(e, "errors", ()), *(a for a in e.args if isinstance(a, BaseException)), e.__cause__, e.__context__]
        stack.extend(reversed([i for i in inner if isinstance(i, BaseException)]))
    return found


def _cause_reason(error, causes):
    """The innermost cause in a few words: "Connection refused", "certificate verify failed: self-signed certificate"."""
    for e in causes:
        if isinstance(e, ssl.SSLCertVerificationError):
            return f"certificate verify failed: {(e.verify_message or e.reason or '').rstrip('.')}"
        if isinstance(e, ssl.SSLError):
            return re.sub(r"^\[SSL: \w+\] | \(_ssl\.c:\d+\)$", "", e.strerror or str(e))
        if isinstance(e, (OSError, http.client.HTTPException)):
            return e.strerror if isinstance(e, OSError) and e.strerror else str(e) or type(e).__name__
    return "timed out" if isinstance(error, elastic_transport.ConnectionTimeout) else str(error)


def secrets_of(client_options):
    """The password and API key of Rally's client options (an API key may be an (id, key) pair), as texts."""
    api_key, http_auth = client_options.get("api_key"), client_options.get("http_auth")
    given = [client_options.get("basic_auth_password"), *(api_key if isinstance(api_key, (list, tuple)) else [api_key])]
    given += [http_auth[1]] if isinstance(http_auth, (list, tuple)) and len(http_auth) > 1 else []
    return [str(s) for s in given if s]


def _scrub(text, secrets):
    for secret in secrets:
        if len(secret) >= 4:
            text = text.replace(secret, "*****")
    return text


def settings(target_hosts, client_options, fixes=CLUSTER):
    """Rally's hosts ([{"host", "port"}]) and client options (a dict) of --target-hosts and --client-options in Rally's
    spelling (`k:v,k:v` text, JSON text, or a .json file), parsed by Rally; settings it cannot read raise ReportError
    naming the fix."""
    try:
        hosts = opts.TargetHosts(target_hosts)
        return rally_compat.default_of(hosts), rally_compat.default_of(opts.ClientOptions(client_options, target_hosts=hosts))
    except (ValueError, KeyError, TypeError, OSError) as e:
        raise unusable(e, fixes) from None


class Cluster:
    """One cluster, as `esrally race` takes it, reached with Rally's own synchronous client (EsClientFactory).

    `url` names it in messages (its hosts as the client reaches them); `client_options` are Rally's options as given."""

    def __init__(self, target_hosts=DEFAULT_TARGET_HOSTS, client_options=DEFAULT_CLIENT_OPTIONS, fixes=CLUSTER):
        """`target_hosts` and `client_options` in Rally's spelling: `k:v,k:v` text, JSON text, or a .json file."""
        self._connect(*settings(target_hosts, client_options, fixes), fixes)

    @classmethod
    def of(cls, hosts, client_options, fixes=CLUSTER):
        """From settings already parsed: Rally's hosts ([{"host", "port"}]) and client options (a dict)."""
        cluster = cls.__new__(cls)
        cluster._connect(hosts, client_options, fixes)
        return cluster

    def _connect(self, hosts, client_options, fixes):
        self.fixes, self.client_options = fixes, dict(client_options)
        self.secrets = secrets_of(client_options)
        try:
            rally_factory = factory.EsClientFactory(hosts, client_options)
            self.hosts, self.url = rally_factory.hosts, ", ".join(rally_factory.hosts)
            self.client = rally_factory.create()
        except (ValueError, KeyError, TypeError, OSError, rally_exceptions.RallyError) as e:
            raise unusable(e, fixes, client_options) from None
        self._by_timeout = {}

    def failure(self, error):
        """This cluster's message for `error` (see `failure`), or None."""
        return failure(error, self.url, self.fixes, self.secrets)

    def post(self, path, body, timeout=600):
        """POST a JSON body (a dict, or bytes already serialized; NDJSON for _msearch) and return the decoded answer."""
        return self.send("POST", path, body, timeout)

    def send(self, method, path, body=None, timeout=600):
        """One request (`timeout` in seconds, as Rally's request-timeout: it overrides the client option); the decoded
        answer. An error answer raises elasticsearch's ApiError, no answer elastic_transport's ConnectionError."""
        headers = None
        if body is not None:
            ndjson = path.split("?")[0].endswith("_msearch")
            headers = {"content-type": "application/x-ndjson" if ndjson else "application/json", "accept": "application/json"}
        if timeout not in self._by_timeout:  # one client per timeout: each checks the product (GET /) once
            self._by_timeout[timeout] = self.client.options(request_timeout=timeout)
        try:
            return self._by_timeout[timeout].perform_request(method, path, headers=headers, body=body).body
        except AttributeError:  # Rally's product check (GET /) reads a non-JSON answer as a dict
            raise ReportError(f"{self.url} does not answer as Elasticsearch: correct {self.fixes.address}") from None

    def section(self, manifest):
        """Which ground truth matches what the cluster holds: the full files or the -1k test-mode files."""
        index = manifest["index"]
        try:
            count = self.send("GET", f"/{index}/_count", timeout=60)["count"]
        except NotFoundError:
            raise ReportError(f"no index {index} at {self.url}: ingest it first (make race CHALLENGE=ingest-baseline)") from None
        section = corpus.section_for_count(manifest, count)
        if section is None:
            raise ReportError(
                f"index {index} holds {count} documents, which matches neither the generated corpus nor its test-mode files: "
                "ingest it first (make race CHALLENGE=ingest-baseline) or regenerate the corpus it was ingested from"
            )
        return section

    @contextlib.contextmanager
    def command_line(self):
        """Failures a user can fix, as the command's exit message (no traceback)."""
        try:
            yield
        except (ReportError, corpus.CorpusError) as e:
            raise SystemExit(str(e))
        except (ApiError, elastic_transport.TransportError) as e:
            message = self.failure(e)
            if message is None:
                raise
            raise SystemExit(message) from None


def add_arguments(parser):
    """The cluster, as `esrally race` takes it: every live-cluster tool's --target-hosts and --client-options."""
    parser.add_argument("--target-hosts", default=DEFAULT_TARGET_HOSTS, help="as esrally race takes it (default: %(default)s)")
    parser.add_argument(
        "--client-options",
        default=DEFAULT_CLIENT_OPTIONS,
        help="as esrally race takes it: k:v,k:v, JSON, or a .json file (keeps secrets off the command line); default: %(default)s",
    )


def from_arguments(parser, args):
    """The Cluster of add_arguments' arguments; settings that cannot make a client are a usage error."""
    try:
        return Cluster(args.target_hosts, args.client_options)
    except ReportError as e:
        parser.error(str(e))


def main(argv=None):
    """Reaches the cluster as a race would, before Rally does (make race and the network targets run it first): TLS,
    credentials and an unreachable host are named with their fix, where Rally's own version check would end in a
    traceback."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    add_arguments(parser)
    args = parser.parse_args(argv)
    cluster = from_arguments(parser, args)
    with cluster.command_line():
        version = cluster.send("GET", "/", timeout=30)["version"]["number"]
    print(f"Elasticsearch {version} at {cluster.url}")


if __name__ == "__main__":
    main()
