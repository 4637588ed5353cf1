"""Which load-driver host ran a sample. Rally puts the client id into every sample's meta, not the host; every runner
of this track adds the host's name (runners/__init__.py registers each one inside NamesItsHost), so that a report
from the metrics store counts per host what each did, and Rally's clients split (esrally race
--load-driver-hosts=a,b: the first half of the clients on a, the rest on b) shows in the samples themselves."""

import socket

from esrally.driver.runner import Delegator

from runners.contracts import records
from runners.contracts.context import CONTEXT_KEY, RaceContext
from runners.contracts.records import HOST_KEY, UNNAMED  # noqa: F401 (this module's names, defined with the records)
from runners.shared import host_load

# operation parameter the track processor sets where a race has several load-driver hosts: how many (share-calibration
# and ingest-epochs, runners/studies/load.py set_load_driver_hosts)
HOSTS_KEY = "load-driver-hosts"


def this_host():
    return socket.gethostname()


def with_host(result):
    """A runner's result as Rally reads it (None, (weight, unit) or a dict) as a dict that names this host."""
    if isinstance(result, dict):
        return {**result, HOST_KEY: this_host()}
    if isinstance(result, tuple) and len(result) == 2:
        return {"weight": result[0], "unit": result[1], HOST_KEY: this_host()}
    return {HOST_KEY: this_host()}  # Rally's own defaults: weight 1, unit ops


class NamesItsHost(Delegator):
    """A runner whose every sample names the load-driver host that ran it (HOST_KEY); what it measures is the
    delegate's. It also sees to the race's host-load sampler on this host (runners/shared/host_load.py), before the
    delegate's timed requests, and hands the sampler's new lines on in the sample's meta, after them."""

    async def __call__(self, es, params):
        record_dir = RaceContext.of(params).record_dir if params.get(CONTEXT_KEY) else None
        if record_dir:
            cluster = params.get(host_load.CLUSTER_KEY)
            host_load.ensure_sampler(record_dir, records.HOST_LOAD, cluster, host_load.authorization(es) if cluster else None)
        result = with_host(await self.delegate(es, params))
        if record_dir:
            records.add(result, records.appended(records.HOST_LOAD, host_load.claim_lines(record_dir, records.HOST_LOAD)))
        return result

    def __repr__(self):
        return repr(self.delegate)
