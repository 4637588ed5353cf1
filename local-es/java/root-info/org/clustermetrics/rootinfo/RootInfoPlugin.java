package org.clustermetrics.rootinfo;

import org.apache.lucene.util.Version;
import org.elasticsearch.Build;
import org.elasticsearch.client.internal.node.NodeClient;
import org.elasticsearch.cluster.service.ClusterService;
import org.elasticsearch.plugins.ActionPlugin;
import org.elasticsearch.plugins.Plugin;
import org.elasticsearch.rest.BaseRestHandler;
import org.elasticsearch.rest.RestHandler;
import org.elasticsearch.rest.RestRequest;
import org.elasticsearch.rest.RestResponse;
import org.elasticsearch.rest.RestStatus;
import org.elasticsearch.xcontent.XContentBuilder;

import java.util.Collection;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;

/**
 * Serves {@code GET /} and {@code HEAD /}, standing in for Elasticsearch's {@code rest-root} module, which is not
 * published on Maven Central. Every client (elasticsearch-py, Rally) reads the version from {@code GET /}.
 * All values come from the running server: Build.current(), Lucene's version, and the cluster state. The plugin class
 * is RootInfoRestPlugin, built from root-info-rest-settings (8.x's getRestHandlers) or root-info-rest-services (9.x's).
 */
public abstract class RootInfoPlugin extends Plugin implements ActionPlugin {
    private final AtomicReference<ClusterService> clusterService = new AtomicReference<>();

    @Override
    public Collection<?> createComponents(PluginServices services) {
        clusterService.set(services.clusterService());
        return List.of();
    }

    /** The handler of GET / and HEAD /: registered by RootInfoRestPlugin, whose hook's signature is the version's. */
    protected final RestHandler rootInfoHandler() {
        return new RootInfoHandler(clusterService::get);
    }

    static final class RootInfoHandler extends BaseRestHandler {
        private final Supplier<ClusterService> clusterService;

        RootInfoHandler(Supplier<ClusterService> clusterService) {
            this.clusterService = clusterService;
        }

        @Override
        public String getName() {
            return "root_info_action";
        }

        @Override
        public List<Route> routes() {
            return List.of(new Route(RestRequest.Method.GET, "/"), new Route(RestRequest.Method.HEAD, "/"));
        }

        @Override
        public boolean canTripCircuitBreaker() {
            return false;
        }

        @Override
        protected RestChannelConsumer prepareRequest(RestRequest request, NodeClient client) {
            return channel -> {
                ClusterService cs = clusterService.get();
                Build build = Build.current();
                XContentBuilder builder = channel.newBuilder();
                if (request.hasParam("pretty") == false) {
                    builder.prettyPrint().lfAtEnd();
                }
                builder.startObject();
                builder.field("name", cs.localNode().getName());
                builder.field("cluster_name", cs.getClusterName().value());
                builder.field("cluster_uuid", cs.state().metadata().clusterUUID());
                builder.startObject("version")
                    .field("number", build.qualifiedVersion())
                    .field("build_flavor", "default")
                    .field("build_type", build.type().displayName())
                    .field("build_hash", build.hash())
                    .field("build_date", build.date())
                    .field("build_snapshot", build.isSnapshot())
                    .field("lucene_version", Version.LATEST.toString())
                    .field("minimum_wire_compatibility_version", build.minWireCompatVersion())
                    .field("minimum_index_compatibility_version", build.minIndexCompatVersion())
                    .endObject();
                builder.field("tagline", "You Know, for Search");
                builder.endObject();
                channel.sendResponse(new RestResponse(RestStatus.OK, builder));
            };
        }
    }
}
