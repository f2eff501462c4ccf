/** Simulated upstreams: an LLM server whose capacity, latency and errors a test sets. */
@NullMarked
package io.sluice.upstream;

import org.jspecify.annotations.NullMarked;
