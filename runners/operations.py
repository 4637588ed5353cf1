"""The one table of this track's operation types: runner, parameter source and load-time validation.

Registration (runners/__init__.py) and the track processor read it; a new operation is one entry here, its runner,
and its validation next to its parameter source. A parameter source is registered under the operation's name, so a
track task names it as "param-source": "<operation type>".
"""

from dataclasses import dataclass
from typing import Callable, Optional

from runners.coverage import (
    Coverage,
    CoverageParamSource,
    FetchCoverage,
    FetchCoverageParamSource,
    validate_coverage,
    validate_fetch_coverage,
)
from runners.index_body import FreshIndexBodyParamSource
from runners.index_checks import VerifyCorpus, VerifyDocCount
from runners.ingest import (
    EpochBulk,
    EpochBulkParamSource,
    IngestCostEpoch,
    IngestEpochs,
    IngestEpochsParamSource,
    IngestSetup,
    validate_bulk,
    validate_ingest,
)
from runners.large_source import (
    LargeSourceCreateIndex,
    LargeSourceFetch,
    LargeSourceFetchParamSource,
    LargeSourceIndex,
    LargeSourceVerify,
    validate_large_fetch,
    validate_large_source,
)
from runners.layouts import CheckLayouts, LayoutStats, validate_layout_stats, validate_layouts
from runners.load import ShareCalibration, validate_share
from runners.memory import BreakerFloor, BreakerFloorParamSource, CheckQuietCluster, validate_breaker_floor
from runners.network import ClearToxics, SetRtt, validate_clear, validate_latency
from runners.privileges import CheckPrivileges
from runners.profile import ProfileBreakdown, ProfileParamSource, validate_profile
from runners.single_doc import (
    SingleDoc,
    SingleDocCount,
    SingleDocParamSource,
    SingleDocSetup,
    validate_single_doc,
    validate_single_doc_count,
    validate_single_doc_setup,
)
from runners.storage import SourceStorage, validate_storage_stats
from runners.widths import SearchPool


@dataclass(frozen=True)
class Operation:
    runner: type
    param_source: Optional[type] = None
    # (operation params, clients, RaceContext) -> None; raises ValueError naming the problem
    validate: Optional[Callable] = None
    # False: of the race context it reads only the record folder, so it needs no corpus of its own
    reads_corpus: bool = True


# parameter sources of Rally's own operations, by the name a task gives as its param-source
PARAM_SOURCES = {"fresh-index-body": FreshIndexBodyParamSource}

OPERATIONS = {
    # an ingest in one task: the index set up afresh, every epoch with its per-epoch cost, the count checked
    "ingest-epochs": Operation(IngestEpochs, IngestEpochsParamSource, validate_ingest),
    # the index set up alone, for epochs that come in tasks of their own (the live challenge)
    "ingest-setup": Operation(IngestSetup, FreshIndexBodyParamSource),
    # one epoch at a time (the live challenge: the last epoch bulk-loaded while queries run)
    "epoch-bulk": Operation(EpochBulk, EpochBulkParamSource, validate_bulk),
    "ingest-cost-epoch": Operation(IngestCostEpoch),
    "verify-doc-count": Operation(VerifyDocCount),
    "verify-corpus": Operation(VerifyCorpus),
    "coverage": Operation(Coverage, CoverageParamSource, validate_coverage),
    "fetch-coverage": Operation(FetchCoverage, FetchCoverageParamSource, validate_fetch_coverage),
    "source-storage": Operation(SourceStorage, validate=validate_storage_stats),
    "check-quiet-cluster": Operation(CheckQuietCluster),
    "breaker-floor": Operation(BreakerFloor, BreakerFloorParamSource, validate_breaker_floor),
    "profile-breakdown": Operation(ProfileBreakdown, ProfileParamSource, validate_profile),
    "check-layouts": Operation(CheckLayouts, validate=validate_layouts),
    "layout-stats": Operation(LayoutStats, validate=validate_layout_stats),
    "single-doc": Operation(SingleDoc, SingleDocParamSource, validate_single_doc),
    "single-doc-setup": Operation(SingleDocSetup, FreshIndexBodyParamSource, validate_single_doc_setup),
    "single-doc-count": Operation(SingleDocCount, validate=validate_single_doc_count),
    # coverage-load on several load-driver hosts: the calibration reaches every host that runs step clients
    "share-calibration": Operation(ShareCalibration, validate=validate_share, reads_corpus=False),
    "set-rtt": Operation(SetRtt, validate=validate_latency),
    "clear-toxics": Operation(ClearToxics, validate=validate_clear),
    "search-pool": Operation(SearchPool, reads_corpus=False),
    "check-privileges": Operation(CheckPrivileges, reads_corpus=False),
    # source-large: documents of its own, generated from the track parameters, in an index of its own
    "large-source-create-index": Operation(LargeSourceCreateIndex, validate=validate_large_source, reads_corpus=False),
    "large-source-index": Operation(LargeSourceIndex, validate=validate_large_source, reads_corpus=False),
    "large-source-verify": Operation(LargeSourceVerify, validate=validate_large_source, reads_corpus=False),
    "large-source-fetch": Operation(LargeSourceFetch, LargeSourceFetchParamSource, validate_large_fetch, reads_corpus=False),
}
