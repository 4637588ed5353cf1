"""A small stand-in for Rally's async Elasticsearch client, for runner unit tests (seconds, no node).

It answers each request from a list of (status, body) in order (an exception in the list is raised instead), records what was sent and the options asked for,
and, like Rally's client after `return_raw_response()`, hands raw bodies back as readable byte streams. Each stream
notes how many requests had been sent when it was read, so a test can tell decoding inside the timed window from
decoding after it."""

import io
import json

import elasticsearch
from elastic_transport import ApiResponseMeta, HttpHeaders, NodeConfig
from elasticsearch.exceptions import HTTP_EXCEPTIONS


class RawBody(io.BytesIO):
    def __init__(self, data, client):
        super().__init__(data)
        self.client, self.read_after = client, None

    def read(self, *args):
        self.read_after = len(self.client.sent)
        return super().read(*args)


class Response:
    def __init__(self, body):
        self.body = body


def _meta(status):
    return ApiResponseMeta(
        status=status, http_version="1.1", headers=HttpHeaders(), duration=0.0, node=NodeConfig("http", "127.0.0.1", 9200)
    )


class StubClient:
    def __init__(self, answers):
        self.answers = list(answers)
        self.sent, self.options_seen, self.bodies, self.raw, self.marks = [], [], [], False, []
        self.on_send = None  # called at each request sent (a test's global order of requests)

    def on_request_start(self):
        self.marks.append("start")

    def on_request_end(self):
        self.marks.append("end")

    @property
    def indices(self):
        return self

    async def get_mapping(self, index):
        return await self.perform_request("GET", f"/{index}/_mapping")

    def options(self, **kwargs):
        self.options_seen.append(kwargs)
        return self

    def return_raw_response(self):
        self.raw = True

    @property
    def transport(self):  # elastic_transport's: its node pool's nodes, whose close() drops their connections
        return self

    @property
    def node_pool(self):
        return self

    def all(self):
        return [self]

    async def close(self):
        self.marks.append("close")

    async def perform_request(self, method, path, params=None, body=None, headers=None):
        self.sent.append({"method": method, "path": path, "params": params, "body": body, "headers": headers})
        if self.on_send:
            self.on_send()
        if isinstance(self.answers[0], Exception):  # a network failure: no HTTP answer at all
            raise self.answers.pop(0)
        status, answer = self.answers.pop(0)
        data = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
        raw = RawBody(data, self) if self.raw else None
        if status >= 300:
            # as the real client does: NotFoundError for 404, ApiError for a status without its own class
            error = HTTP_EXCEPTIONS.get(status, elasticsearch.ApiError)
            raise error(message=str(status), meta=_meta(status), body=raw or json.loads(data))
        response_body = raw if self.raw else json.loads(data)
        self.bodies.append(response_body)
        return Response(response_body)
