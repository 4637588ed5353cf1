"""What a runner returns to Rally, in one place.

Rally reads weight, unit and success of a runner's dict, error-type and error-description of a failed one, and keeps
every other key as the sample's meta-data (stored with each sample in an Elasticsearch metrics store). Result keys are
hyphenated, as Rally's own are (error-type, error-description, http-status, success-count).
"""

import logging

LOG = logging.getLogger(__name__)


def failed(description, error_type="cluster-metrics", unit="ops", meta=None):
    """A failed sample whose description says what went wrong (logged too: Rally's summary shows only the rate).

    Weight 0, as Rally gives its own failed requests (esrally/driver/driver.py execute_single): throughput counts only
    work that succeeded, so a fast 429 or a fast wrong answer adds nothing to it. Rally's latency and service-time
    percentiles take every sample, failed or not (its metrics store does not filter on success): a task with an
    error rate above 0 has percentiles that mean nothing, which is why the report marks it FAILED and ranks nothing
    by it."""
    LOG.warning("failed sample (%s): %s", error_type, description)
    return {"weight": 0, "unit": unit, "success": False, "error-type": error_type, "error-description": description, **(meta or {})}
