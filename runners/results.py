"""What a runner returns to Rally, in one place.

Rally reads weight, unit and success of a runner's dict, error-type and error-description of a failed one, and keeps
every other key as the sample's meta-data (stored with each sample in an Elasticsearch metrics store). Result keys are
hyphenated, as Rally's own are (error-type, error-description, http-status, success-count).
"""

import logging

LOG = logging.getLogger(__name__)


def failed(description, error_type="cluster-metrics", unit="ops", meta=None):
    """A failed sample whose description says what went wrong (logged too: Rally's summary shows only the rate)."""
    LOG.warning("%s failed: %s", error_type, description)
    return {"weight": 1, "unit": unit, "success": False, "error-type": error_type, "error-description": description, **(meta or {})}
