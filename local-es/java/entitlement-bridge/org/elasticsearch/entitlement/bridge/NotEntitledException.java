package org.elasticsearch.entitlement.bridge;

/** Thrown by the registry when the calling code is not entitled to the action. */
public class NotEntitledException extends RuntimeException {
    public NotEntitledException(String message) {
        super(message);
    }
}
