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
from runners.index_checks import VerifyCorpus, VerifyDocCount
from runners.ingest import BulkWithTook, EpochBulkParamSource, IngestCostStart, IngestEpochCost, validate_bulk
from runners.layouts import CheckClusterLayouts, LayoutStats, validate_layout_stats, validate_layouts
from runners.memory import BreakerFloorParamSource, RequestBreakerFloor, validate_breaker_floor
from runners.network import (
    NetworkFault,
    NetworkLatency,
    RegisterRemoteCluster,
    RemoveRemoteCluster,
    validate_fault,
    validate_latency,
    validate_remote,
)
from runners.profile import ProfileBreakdown, validate_profile
from runners.storage import SourceStorageStats, validate_storage_stats


@dataclass(frozen=True)
class Operation:
    runner: type
    param_source: Optional[type] = None
    # (operation params, clients, RaceContext) -> None; raises ValueError naming the problem
    validate: Optional[Callable] = None


OPERATIONS = {
    "cluster-metrics-bulk": Operation(BulkWithTook, EpochBulkParamSource, validate_bulk),
    "ingest-cost-start": Operation(IngestCostStart),
    "ingest-epoch-cost": Operation(IngestEpochCost),
    "verify-doc-count": Operation(VerifyDocCount),
    "verify-corpus": Operation(VerifyCorpus),
    "coverage": Operation(Coverage, CoverageParamSource, validate_coverage),
    "fetch-coverage": Operation(FetchCoverage, FetchCoverageParamSource, validate_fetch_coverage),
    "source-storage-stats": Operation(SourceStorageStats, validate=validate_storage_stats),
    "request-breaker-floor": Operation(RequestBreakerFloor, BreakerFloorParamSource, validate_breaker_floor),
    "profile-breakdown": Operation(ProfileBreakdown, validate=validate_profile),
    "check-cluster-layouts": Operation(CheckClusterLayouts, validate=validate_layouts),
    "layout-stats": Operation(LayoutStats, validate=validate_layout_stats),
    "network-latency": Operation(NetworkLatency, validate=validate_latency),
    "network-fault": Operation(NetworkFault, validate=validate_fault),
    "register-remote-cluster": Operation(RegisterRemoteCluster, validate=validate_remote),
    "remove-remote-cluster": Operation(RemoveRemoteCluster, validate=validate_remote),
}
