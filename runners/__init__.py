"""Custom runners, parameter sources and the track processor of the cluster-metrics track."""

from esrally.track import loader

from runners.context import ClusterMetricsContext
from runners.coverage import Coverage, CoverageParamSource
from runners.ingest import BulkWithTook, EpochBulkParamSource, IngestEpochCost, VerifyDocCount
from runners.profile import ProfileBreakdown


def register(registry):
    # a custom processor replaces Rally's default preparator (decompression, file checks) unless it is registered too
    registry.register_track_processor(loader.DefaultTrackPreparator())
    registry.register_track_processor(ClusterMetricsContext())
    registry.register_param_source("epoch-bulk", EpochBulkParamSource)
    registry.register_param_source("coverage", CoverageParamSource)
    registry.register_runner("cluster-metrics-bulk", BulkWithTook(), async_runner=True)
    registry.register_runner("ingest-epoch-cost", IngestEpochCost(), async_runner=True)
    registry.register_runner("verify-doc-count", VerifyDocCount(), async_runner=True)
    registry.register_runner("coverage", Coverage(), async_runner=True)
    registry.register_runner("profile-breakdown", ProfileBreakdown(), async_runner=True)
