package io.sluice.observability;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.common.AttributesBuilder;
import io.opentelemetry.api.metrics.Meter;
import java.util.Map;

/**
 * The OTLP counters, read from the Prometheus meters when the SDK exports (asynchronous counters):
 * one recording per request, Micrometer's, so OTLP and {@code /metrics} report the same numbers and
 * telemetry adds nothing per request for them. Registered once per SDK ({@link TelemetryExport});
 * Micrometer's tags become {@code sluice.*} attributes (and {@code direction} the GenAI {@code
 * gen_ai.token.type}); other tags are not exported.
 */
final class OtelCounters {
  /** Micrometer's tag to the OTLP attribute. */
  private static final Map<String, AttributeKey<String>> ATTRIBUTES =
      Map.of(
          "pool", OtelRecorder.Sluice.POOL,
          "class", OtelRecorder.Sluice.CLASS,
          "tier", OtelRecorder.Sluice.TIER,
          "decision", OtelRecorder.Sluice.DECISION,
          "reason", OtelRecorder.Sluice.REASON,
          "result", OtelRecorder.Sluice.RESULT,
          "cause", OtelRecorder.Sluice.WASTE_CAUSE,
          "rule", OtelRecorder.Sluice.CHARGE_RULE,
          "direction", GenAi.TOKEN_TYPE);

  private OtelCounters() {}

  /** Registers the counters on {@code meter}, each reading its Micrometer meter in {@code from}. */
  static void register(Meter meter, MeterRegistry from) {
    counter(
        meter,
        from,
        "sluice.admission.decisions",
        MetricNames.DECISIONS,
        "{decision}",
        "admission decisions by decision and reason (Prometheus: sluice_decisions_total)");
    counter(
        meter,
        from,
        "sluice.answers",
        SloMetrics.ANSWERS,
        "{answer}",
        "answers that ran upstream, by result (goodput: 2xx within deadline)");
    counter(
        meter,
        from,
        "sluice.wasted.tokens",
        SloMetrics.WASTED_TOKENS,
        "{token}",
        "output tokens produced for an answer cancelled or past its deadline");
    counter(
        meter,
        from,
        "sluice.charged.tokens",
        MetricNames.TOKENS_CHARGED,
        "{token}",
        "tokens charged, by pool, charge rule and token type");
  }

  private static void counter(
      Meter meter,
      MeterRegistry from,
      String name,
      String micrometerName,
      String unit,
      String description) {
    meter
        .counterBuilder(name)
        .setUnit(unit)
        .setDescription(description)
        .buildWithCallback(
            m -> {
              for (Counter c : from.find(micrometerName).counters()) {
                m.record((long) c.count(), attributes(c.getId().getTagsAsIterable()));
              }
            });
  }

  /** The attributes of a Micrometer meter's tags. */
  static Attributes attributes(Iterable<Tag> tags) {
    AttributesBuilder a = Attributes.builder();
    for (Tag t : tags) {
      AttributeKey<String> key = ATTRIBUTES.get(t.getKey());
      if (key != null) {
        a.put(key, t.getValue());
      }
    }
    return a.build();
  }
}
