package org.elasticsearch.entitlement.bridge;

import java.lang.reflect.Method;

/** The registry the instrumented code reaches: Elasticsearch's, asked once of its entitlement initialization. */
public final class InstrumentationRegistryHandle {
    private static final String INITIALIZATION = "org.elasticsearch.entitlement.initialization.EntitlementInitialization";

    public static InstrumentationRegistry instance() {
        return Holder.REGISTRY;
    }

    private static final class Holder {
        static final InstrumentationRegistry REGISTRY = load();

        private static InstrumentationRegistry load() {
            try {
                Method registry = ClassLoader.getSystemClassLoader().loadClass(INITIALIZATION).getMethod("instrumentationRegistry");
                return InstrumentationRegistry.class.cast(registry.invoke(null));
            } catch (ReflectiveOperationException e) {
                throw new AssertionError("the entitlement bridge cannot reach " + INITIALIZATION + ".instrumentationRegistry()", e);
            }
        }
    }

    private InstrumentationRegistryHandle() {}
}
