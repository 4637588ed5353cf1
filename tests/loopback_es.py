"""A loopback stand-in for a plain-HTTP Elasticsearch node, enough for Rally's synchronous client (its product check on
GET /) and report.shared.cluster. It has no security: TLS, credentials and privileges come from tests/secure_stand_in.py's
SecuredStandIn put in front of it. It records what each request carried (method, path, headers, body)."""

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

INFO = {"name": "stand-in", "version": {"number": "8.17.2", "build_flavor": "default"}, "tagline": "You Know, for Search"}


def closed_port():
    """A loopback port nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LoopbackElasticsearch:
    """`with LoopbackElasticsearch(count=...) as es:` serves plain HTTP on 127.0.0.1:es.port. `count`: what
    /<index>/_count answers (None: 404, no such index); `nodes_stats`: (status, body) that /_nodes/stats answers;
    `requests`: {"method", "path", "headers" (names lower-cased), "body"} of each request, in order."""

    def __init__(self, count=0, nodes_stats=(200, {"nodes": {}})):
        self.count, self.nodes_stats, self.requests = count, nodes_stats, []
        node = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # as Elasticsearch (else each answer waits on the client's delayed ACK)

            def log_message(self, *args):
                pass

            def _answer(self, status, body):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("x-elastic-product", "Elasticsearch")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _handle(self):
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                headers = {name.lower(): value for name, value in self.headers.items()}
                node.requests.append({"method": self.command, "path": self.path, "headers": headers, "body": body})
                path = self.path.split("?")[0]
                if path == "/":
                    return self._answer(200, INFO)
                if path.startswith("/_nodes/stats"):
                    return self._answer(*node.nodes_stats)
                if path.endswith("/_count"):
                    if node.count is None:
                        cause = {"type": "index_not_found_exception", "reason": f"no such index [{path.split('/')[1]}]"}
                        return self._answer(404, {"error": {"root_cause": [cause], **cause}, "status": 404})
                    return self._answer(200, {"count": node.count})
                if path.endswith("/_msearch"):
                    lines = [line for line in body.split(b"\n") if line.strip()]
                    return self._answer(200, {"responses": [{"hits": {"hits": []}} for _ in lines[1::2]]})
                return self._answer(200, {"hits": {"total": {"value": 0}, "hits": []}})

            do_GET = do_POST = do_PUT = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]

    def __enter__(self):
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
