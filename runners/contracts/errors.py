"""Elasticsearch's error answers, read one way wherever a reason is shown: by the runners' failed samples and
checks, and by the report's cluster check (report/shared/cluster.py)."""


def error_reason(error):
    """Elasticsearch's own reason for an error answer of the client (ApiError): the error's reason (for a 403, the
    action and the privileges that grant it), its type, or the plain text of an error without structure ("no handler
    found for uri ...")."""
    body = error.body
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return body["error"].get("reason") or body["error"].get("type") or str(error.message)
    if isinstance(body, dict) and body.get("error"):
        return str(body["error"])
    return str(error.message)
