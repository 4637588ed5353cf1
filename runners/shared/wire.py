"""What the track's timed requests carry beyond Rally's client defaults, defined once for every runner that sends them.

Rally's client (aiohttp) asks for gzip answers by default (`accept-encoding: gzip, deflate`), which a plain client such as
curl does not: Elasticsearch then compresses every answer and the load driver decompresses it, inside the timed window.
On this machine that was 1.3 ms of a 21 ms bulk of 1,000 documents (report/client_cost.py). The track's coverages and
bulks ask for the answer as it is, as the seed's client did."""

IDENTITY = {"accept-encoding": "identity"}
