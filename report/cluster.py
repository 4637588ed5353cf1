"""The live-cluster tools' one small client (make accuracy, make validation-proof): JSON over HTTP with the standard
library, which ground-truth section the index holds, and one message for each kind of failure."""

import contextlib
import json
import urllib.error
import urllib.request

from report import ReportError
from runners import corpus


class Cluster:
    def __init__(self, target_hosts, scheme="http"):
        self.url = f"{scheme}://" + target_hosts.split(",")[0]
        self.headers = {}

    def post(self, path, body, timeout=600):
        """POST a JSON body (a dict, or bytes already serialized; NDJSON for _msearch) and return the decoded answer."""
        return self.send("POST", path, body, timeout)

    def send(self, method, path, body, timeout=600):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        ndjson = path.endswith("_msearch")
        request = urllib.request.Request(
            self.url + path,
            data=data,
            method=method,
            headers={**self.headers, "content-type": "application/x-ndjson" if ndjson else "application/json"},
        )
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.loads(response.read())

    def section(self, manifest):
        """Which ground truth matches what the cluster holds: the full files or the -1k test-mode files."""
        index = manifest["index"]
        with urllib.request.urlopen(f"{self.url}/{index}/_count", timeout=60) as response:
            count = json.loads(response.read())["count"]
        section = corpus.section_for_count(manifest, count)
        if section is None:
            raise ReportError(
                f"index {index} holds {count} documents, which matches neither the generated corpus nor its test-mode files: "
                "ingest it first (make race CHALLENGE=ingest-baseline) or regenerate the corpus it was ingested from"
            )
        return section

    @contextlib.contextmanager
    def command_line(self):
        """Failures a user can fix, as the command's exit message."""
        try:
            yield
        except (ReportError, corpus.CorpusError) as e:
            raise SystemExit(str(e))
        except urllib.error.URLError as e:
            raise SystemExit(
                f"cannot reach Elasticsearch at {self.url} ({e.reason}): start it with make es-start, or pass TARGET_HOSTS=host:port"
            )
