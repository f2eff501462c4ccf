package io.sluice.routing;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.config.ConfigLoader;
import io.sluice.core.session.Signals;
import org.junit.jupiter.api.Test;

/**
 * A signal read only beside another ({@code ConfigSection.signalsBeside}): with telemetry on, W3C
 * {@code tracestate} is not even looked up for a request without a {@code traceparent}, and is read
 * as before beside one.
 */
class SignalsBesideTest {
  private static final String TRACEPARENT =
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

  private static RequestResolver telemetryOn() {
    return new RequestResolver(
        ConfigLoader.parse(
            """
            pools: {p: {capacity: 100}}
            classes: {c: {rank: 0}}
            routes: [{name: chat, match: {pathPrefix: /v1/chat}, pool: p, class: c}]
            telemetry: {enabled: true}
            """));
  }

  @Test
  void tracestate_isNotLookedUpWithoutATraceparent_andReadBesideOne() {
    RequestResolver r = telemetryOn();
    CountingSource alone = new CountingSource();
    alone.request.header("tracestate", "vendor=1");
    Signals read = r.resolve(alone, 0).signals();
    assertThat(read.get("tracestate")).isNull();
    assertThat(alone.asked).contains("traceparent").doesNotContain("tracestate");

    CountingSource both = new CountingSource();
    both.request.header("traceparent", TRACEPARENT).header("tracestate", "vendor=1");
    Signals beside = r.resolve(both, 0).signals();
    assertThat(beside.get("traceparent")).isEqualTo(TRACEPARENT);
    assertThat(beside.get("tracestate")).isEqualTo("vendor=1");
  }
}
