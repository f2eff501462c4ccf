/** Load generation: workloads, the LLM stream's messages, balancers and the load generator. */
@NullMarked
package io.sluice.harness;

import org.jspecify.annotations.NullMarked;
