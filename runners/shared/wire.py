"""What the track's timed requests carry beyond Rally's client defaults, defined once for every runner that sends them.

Rally's client (aiohttp) asks for gzip answers by default (`accept-encoding: gzip, deflate`), which a plain client such as
curl does not: Elasticsearch then compresses every answer and the load driver decompresses it, inside the timed window.
On this machine that was 1.3 ms of a 21 ms bulk of 1,000 documents (report/client_cost.py). The track's coverages and
bulks ask for the answer as it is, as the seed's client did.

source-large's requests and answers go as JSON or as CBOR (runners/studies/large_source.py): both formats send the
vendor media types of Elasticsearch 8 with compatible-with=8 on both headers, since Rally's client rewrites
application/json so (but not application/cbor), and Elasticsearch refuses a request body whose Content-Type and Accept
disagree on it; a CBOR answer is kept as its bytes (accept_cbor)."""

import io
import json

import cbor2
from elastic_transport import Serializer

IDENTITY = {"accept-encoding": "identity"}
CONTENT_TYPE = "application/vnd.elasticsearch+json; compatible-with=8"
ACCEPT = {"json": "application/vnd.elasticsearch+json; compatible-with=8", "cbor": "application/vnd.elasticsearch+cbor; compatible-with=8"}
CBOR_MIMETYPES = ("application/cbor", "application/vnd.elasticsearch+cbor")
DECODE = {"json": json.loads, "cbor": cbor2.loads}


class RawBody(Serializer):
    """A CBOR answer handed back as its bytes, as Rally's client hands back a JSON one after return_raw_response()."""

    mimetype = CBOR_MIMETYPES[0]

    def loads(self, data):
        return io.BytesIO(data)

    def dumps(self, data):
        if isinstance(data, bytes):
            return data
        raise TypeError("a CBOR request body must be bytes")


def accept_cbor(es):
    """Rally's client decodes a response by its content type and knows no CBOR (it would raise a SerializationError
    on the answer): the client's transport gets a serializer that hands CBOR bytes back as they came."""
    collection = getattr(getattr(es, "transport", None), "serializers", None)
    if collection is not None:
        for mimetype in CBOR_MIMETYPES:
            collection.serializers.setdefault(mimetype, RawBody())
