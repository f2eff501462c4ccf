package io.sluice.routing;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.config.ConfigLoader;
import io.sluice.core.session.Signals;
import org.junit.jupiter.api.Test;

/**
 * Signals a feature reads only for the decision record ({@code ConfigSection.recordSignals}):
 * correlation's request id and trace headers are read while records are written, and not even
 * looked up while they are not; with telemetry's export on, the span reads them whatever the log.
 */
class RecordSignalsTest {
  private static final String TRACEPARENT =
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

  /** A request with a request id and a trace context. */
  private static CountingSource traced() {
    CountingSource c = new CountingSource();
    c.request.header("x-request-id", "7f8e9d0c").header("traceparent", TRACEPARENT);
    return c;
  }

  private static RequestResolver resolver(String telemetry) {
    return new RequestResolver(
        ConfigLoader.parse(
            """
            pools: {p: {capacity: 100}}
            classes: {c: {rank: 0}}
            routes: [{name: chat, match: {pathPrefix: /v1/chat}, pool: p, class: c}]
            """
                + telemetry));
  }

  @Test
  void correlationOnly_readsTheRequestIdWhileRecordsAreWritten_andNothingWhileNot() {
    RequestResolver r = resolver("telemetry: {correlation: true}\n");
    assertReadBoth(r.resolve(traced(), 0, true).signals());

    CountingSource silent = traced();
    Signals without = r.resolve(silent, 0, false).signals();
    assertThat(without.get("requestId")).isNull();
    assertThat(without.get("traceparent")).isNull();
    assertThat(silent.asked).doesNotContain("x-request-id", "traceparent");
  }

  @Test
  void exportOn_readsThemWithoutRecordsToo() {
    RequestResolver r = resolver("telemetry: {enabled: true}\n");
    assertReadBoth(r.resolve(traced(), 0, false).signals());
  }

  private static void assertReadBoth(Signals read) {
    assertThat(read.get("requestId")).isEqualTo("7f8e9d0c");
    assertThat(read.get("traceparent")).isEqualTo(TRACEPARENT);
  }
}
