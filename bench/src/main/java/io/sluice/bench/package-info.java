/**
 * Benchmarks and the demo: scenarios, the transport floor, cold starts, replicas, charts. Not
 * null-marked yet (the build runs NullAway here, but it checks marked packages only): listed in
 * NullnessRulesTest's NOT_YET_MARKED.
 */
package io.sluice.bench;
