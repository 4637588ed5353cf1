"""A loopback HTTP proxy in front of the test node that can answer 429 or rewrite Elasticsearch's real answers, to
prove inside real races that a rejected request or a wrong answer is a failed sample. (Toxiproxy works on TCP and
can neither answer with an HTTP status nor rewrite JSON; that is all this does.)

Modes: "pass" forwards everything; "429-unless-retried" answers every coverage request with a real-looking 429 unless
it repeats the request just before it (a client's retry would pass: a coverage succeeds only if it retries);
"double-net-p50" doubles every net p50 in coverage answers (in _msearch sub-responses and terms buckets too), after
the first `corrupt_after` coverage requests (0: from the first); "far-off-p0.0005" puts every percentile whose key is
0.0005 as a double (Elasticsearch spells it 5.0E-4) at 10^9, wherever the answer holds one."""

import json
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

REJECTED = {
    "error": {
        "root_cause": [{"type": "es_rejected_execution_exception", "reason": "rejected by the test proxy"}],
        "type": "es_rejected_execution_exception",
        "reason": "rejected by the test proxy",
    },
    "status": 429,
}


def _walk(node, visit):
    """visit(mapping) for every JSON object of an answer, nested ones too."""
    if isinstance(node, dict):
        visit(node)
        for value in node.values():
            _walk(value, visit)
    elif isinstance(node, list):
        for item in node:
            _walk(item, visit)


def _double_net_p50(answer):
    def visit(node):
        values = node["net_pct"].get("values", {}) if isinstance(node.get("net_pct"), dict) else {}
        if "50.0" in values:
            values["50.0"] *= 2

    _walk(answer, visit)


def _far_off_p0_0005(answer):
    def visit(node):
        values = node.get("values")
        for percent in [k for k in values if _as_float(k) == 0.0005] if isinstance(values, dict) else []:
            values[percent] = 1e9

    _walk(answer, visit)


def _as_float(text):
    try:
        return float(text)
    except ValueError:
        return None


REWRITES = {"double-net-p50": _double_net_p50, "far-off-p0.0005": _far_off_p0_0005}


class AnswerProxy:
    def __init__(self, upstream_port, mode="pass", corrupt_after=0):
        self.mode, self.searches, self.rejected, self.corrupt_after = mode, 0, 0, corrupt_after
        self.last_search = None
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _forward(self):
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                # a coverage's search: the track switches the request cache off in each of them (URL or header line)
                search = b"request_cache" in body or "request_cache=false" in self.path
                if search:
                    proxy.searches += 1
                    retried, proxy.last_search = proxy.last_search == (self.path, body), (self.path, body)
                    if proxy.mode == "429-unless-retried" and not retried:
                        proxy.rejected += 1
                        return self._answer(429, json.dumps(REJECTED).encode(), "application/json")
                # plain answers (no gzip), so that they can be rewritten and passed on with their own length
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length", "accept-encoding")}
                request = urllib.request.Request(
                    f"http://127.0.0.1:{upstream_port}{self.path}", data=body or None, method=self.command, headers=headers
                )
                try:
                    with urllib.request.urlopen(request, timeout=120) as response:
                        status, data, kind = response.status, response.read(), response.headers.get("content-type")
                except urllib.error.HTTPError as e:
                    status, data, kind = e.code, e.read(), e.headers.get("content-type")
                if search and proxy.mode in REWRITES and status == 200 and proxy.searches > proxy.corrupt_after:
                    answer = json.loads(data)
                    REWRITES[proxy.mode](answer)
                    data = json.dumps(answer).encode()
                self._answer(status, data, kind or "application/json")

            def _answer(self, status, data, kind):
                self.send_response(status)
                self.send_header("content-type", kind)
                self.send_header("x-elastic-product", "Elasticsearch")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _forward

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()
