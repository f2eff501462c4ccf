/** Benchmarks and the demo: scenarios, the transport floor, cold starts, replicas, charts. */
@NullMarked
package io.sluice.bench;

import org.jspecify.annotations.NullMarked;
