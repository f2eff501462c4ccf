/**
 * Store ports: fixed-window counters and token buckets. Plain Java, asynchronous ({@link
 * java.util.concurrent.CompletionStage}); implementations live in {@code io.sluice.store.*}.
 */
@NullMarked
package io.sluice.core.store;

import org.jspecify.annotations.NullMarked;
