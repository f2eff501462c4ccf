package io.sluice.observability;

import static org.assertj.core.api.Assertions.assertThat;

import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.metrics.DoubleHistogram;
import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.metrics.InstrumentType;
import io.opentelemetry.sdk.metrics.SdkMeterProvider;
import io.opentelemetry.sdk.metrics.data.AggregationTemporality;
import io.opentelemetry.sdk.metrics.data.HistogramPointData;
import io.opentelemetry.sdk.metrics.data.MetricData;
import io.opentelemetry.sdk.metrics.export.CollectionRegistration;
import io.opentelemetry.sdk.metrics.export.MetricReader;
import io.sluice.core.admission.Outcome;
import io.sluice.core.admission.Reason;
import io.sluice.core.estimate.RequestFormat;
import io.sluice.core.estimate.Usage;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.session.Charge;
import io.sluice.core.session.CheckNotes;
import io.sluice.core.session.OneSlotPool;
import io.sluice.core.session.RequestFacts;
import io.sluice.core.session.SessionEvent;
import io.sluice.core.session.Signals;
import io.sluice.core.session.Subject;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * {@link OtelHistograms} read by the SDK at export, as a meter provider's reader reads it: the
 * histograms of released answers (durations, time to first token, per output token, token usage)
 * and of queued requests, cumulative, with the conventions' attributes and boundaries, and bucket
 * counts equal to those the SDK's own explicit-bucket histogram gives the same values (boundary
 * values included: a bucket holds values up to and including its bound).
 */
class OtelHistogramsTest {
  private static final long MS = 1_000_000L;

  /** A reader that collects on demand (the SDK's periodic reader does so when it exports). */
  private static final class Reader implements MetricReader {
    private CollectionRegistration registration = CollectionRegistration.noop();

    @Override
    public void register(CollectionRegistration r) {
      registration = r;
    }

    Collection<MetricData> collect() {
      return registration.collectAllMetrics();
    }

    @Override
    public AggregationTemporality getAggregationTemporality(InstrumentType type) {
      return AggregationTemporality.CUMULATIVE;
    }

    @Override
    public CompletableResultCode forceFlush() {
      return CompletableResultCode.ofSuccess();
    }

    @Override
    public CompletableResultCode shutdown() {
      return CompletableResultCode.ofSuccess();
    }
  }

  private final OtelHistograms histograms = new OtelHistograms(() -> 1_000L);
  private final Reader reader = new Reader();
  private final SdkMeterProvider provider =
      SdkMeterProvider.builder()
          .registerMetricReader(reader)
          .registerMetricProducer(histograms)
          .build();

  /**
   * An answer admitted {@code admittedMs} after arrival (queued there when {@code queued}), its
   * first chunk {@code firstMs} later, held {@code heldMs}, with 5 input and {@code out} output
   * tokens.
   */
  private static SessionEvent.Released released(
      long admittedMs, long firstMs, long heldMs, long out, boolean queued) {
    Subject s =
        new Subject(
            "chat",
            OneSlotPool.POOL,
            OneSlotPool.INTERACTIVE,
            RequestFormat.OPENAI_CHAT,
            new Tenant("acme", new TierPolicy("pro", 1, 0, 0, 0, 0)),
            0,
            60_000 * MS,
            null,
            0,
            false,
            0,
            null,
            Signals.NONE);
    RequestFacts f =
        new RequestFacts(
            s,
            1_800_000_000_000L,
            "body",
            null,
            new RequestFacts.Decided(
                Reason.ADMITTED, 50_000, queued ? 1 : 0, queued ? admittedMs * MS : 0, -1, 0, null),
            new RequestFacts.Run(OneSlotPool.POOL, true, null, null, null, admittedMs * MS),
            null,
            CheckNotes.NONE,
            new RequestFacts.End(
                200,
                "seen",
                false,
                new Charge(Charge.REPORTED, 5, out, out, 0),
                true,
                firstMs * MS));
    return new SessionEvent.Released(f, Outcome.COMPLETED, heldMs * MS, new Usage(5, out, 0, true));
  }

  private void record(SessionEvent.Released e) {
    histograms.record(e.facts(), "admit", "admitted", e);
  }

  private MetricData metric(String name) {
    return reader.collect().stream()
        .filter(m -> m.getName().equals(name))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no " + name));
  }

  private static List<HistogramPointData> points(MetricData m) {
    return new ArrayList<>(m.getHistogramData().getPoints());
  }

  @Test
  void answers_exportedAsCumulativeHistograms_withTheConventionsAttributesAndBuckets() {
    // TTFT 100 + 200 = 300 ms, duration 100 + 1100 = 1.2 s, TPOT (1100 - 200) / 10 = 90 ms
    record(released(100, 200, 1_100, 11, false));
    record(released(100, 200, 1_100, 11, false));

    MetricData duration = metric(GenAi.SERVER_REQUEST_DURATION);
    assertThat(duration.getUnit()).isEqualTo("s");
    assertThat(duration.getHistogramData().getAggregationTemporality())
        .isEqualTo(AggregationTemporality.CUMULATIVE);
    HistogramPointData d = points(duration).get(0);
    assertThat(d.getCount()).isEqualTo(2);
    assertThat(d.getSum()).isCloseTo(2.4, org.assertj.core.data.Offset.offset(1e-9));
    assertThat(d.getBoundaries()).isEqualTo(GenAi.DURATION_BUCKETS);
    assertThat(d.getCounts().get(GenAi.DURATION_BUCKETS.indexOf(1.28))).isEqualTo(2);
    assertThat(d.getAttributes().get(AttributeKey.stringKey("gen_ai.operation.name")))
        .isEqualTo("chat");
    assertThat(d.getAttributes().get(OtelRecorder.Sluice.TIER)).isEqualTo("pro");
    assertThat(d.getAttributes().get(OtelRecorder.Sluice.POOL)).isEqualTo(OneSlotPool.POOL.name());

    HistogramPointData ttft = points(metric(GenAi.SERVER_TIME_TO_FIRST_TOKEN)).get(0);
    assertThat(ttft.getSum()).isCloseTo(0.6, org.assertj.core.data.Offset.offset(1e-9));
    HistogramPointData tpot = points(metric(GenAi.SERVER_TIME_PER_OUTPUT_TOKEN)).get(0);
    assertThat(tpot.getSum()).isCloseTo(0.18, org.assertj.core.data.Offset.offset(1e-9));

    List<HistogramPointData> tokens = points(metric(GenAi.CLIENT_TOKEN_USAGE));
    assertThat(
            tokens.stream()
                .collect(
                    Collectors.toMap(
                        p -> p.getAttributes().get(GenAi.TOKEN_TYPE), HistogramPointData::getSum)))
        .containsEntry(GenAi.INPUT, 10.0)
        .containsEntry(GenAi.OUTPUT, 22.0);
    // nothing queued: no queue wait series
    assertThat(reader.collect().stream().map(MetricData::getName))
        .doesNotContain("sluice.queue.wait.duration");
  }

  @Test
  void bucketCounts_areTheSdksForTheSameValues_boundsIncluded() {
    DoubleHistogram sdk =
        provider
            .get("test")
            .histogramBuilder("sdk.duration")
            .setExplicitBucketBoundariesAdvice(GenAi.DURATION_BUCKETS)
            .build();
    // durations (admitted 1 ms after arrival, held the rest): on the bounds and between them
    long[] durationMs = {1, 10, 11, 20, 640, 1_280, 1_281, 81_920, 90_000};
    for (long ms : durationMs) {
      record(released(1, 0, ms - 1, 1, false));
      sdk.record(ms / 1e3);
    }
    List<Long> ours = points(metric(GenAi.SERVER_REQUEST_DURATION)).get(0).getCounts();
    List<Long> theirs = points(metric("sdk.duration")).get(0).getCounts();
    assertThat(ours).isEqualTo(theirs);
  }

  @Test
  void queuedRequests_recordTheirWait_byDecisionAndReason() {
    record(released(250, 10, 100, 3, true));
    HistogramPointData wait = points(metric("sluice.queue.wait.duration")).get(0);
    assertThat(wait.getCount()).isEqualTo(1);
    assertThat(wait.getSum()).isCloseTo(0.25, org.assertj.core.data.Offset.offset(1e-9));
    assertThat(wait.getAttributes().get(OtelRecorder.Sluice.DECISION)).isEqualTo("admit");
    assertThat(wait.getAttributes().get(OtelRecorder.Sluice.REASON)).isEqualTo("admitted");
    assertThat(wait.getStartEpochNanos()).isEqualTo(1_000L);
  }
}
