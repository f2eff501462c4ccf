/**
 * {@code sluice calibrate}: a bounded load test that ramps concurrency against an OpenAI-compatible
 * endpoint, finds the knee of its throughput curve (and any concurrency ceiling, 429/503 above some
 * concurrency) and proposes a pool. Plain JDK HTTP client; no gRPC, no store.
 */
@NullMarked
package io.sluice.calibrate;

import org.jspecify.annotations.NullMarked;
