package org.clustermetrics.entitlement;

import java.lang.instrument.Instrumentation;

/**
 * The Java agent the server attaches to itself at start-up (the launcher's stand-in for Elasticsearch's unpublished
 * entitlement agent): it hands the JVM's Instrumentation to the published entitlement library, which instruments the
 * JDK. The library exports its initialization to this agent before attaching it.
 */
public final class EntitlementAgent {
    private static final String INITIALIZATION = "org.elasticsearch.entitlement.initialization.EntitlementInitialization";

    public static void agentmain(String agentArgs, Instrumentation inst) throws ReflectiveOperationException {
        Class.forName(INITIALIZATION).getMethod("initialize", Instrumentation.class).invoke(null, inst);
    }

    private EntitlementAgent() {}
}
