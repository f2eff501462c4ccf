package io.sluice.observability;

import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.config.MeterFilter;
import io.micrometer.core.instrument.config.MeterFilterReply;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * Keeps the Prometheus scrape clean for {@code promtool check metrics} (docs/metrics.md,
 * "Conventions"): every family has HELP text (meters registered without a description get theirs
 * from {@link #HELP}, by Micrometer name), and the two JVM meters whose Prometheus names break the
 * naming rules are replaced: Micrometer's {@code process_cpu_time_ns_total} (an abbreviated unit)
 * by {@code process_cpu_seconds_total} (the name Prometheus' own clients use), {@code
 * system_cpu_count} (a {@code _count} suffix on a gauge) by {@code system_cpus_available}.
 * Installed on the registry before any meter is bound ({@link #install}).
 */
public final class MetricHelp {
  private MetricHelp() {}

  /** Micrometer's name of the CPU time counter it renders as {@code process_cpu_time_ns_total}. */
  static final String PROCESS_CPU_TIME = "process.cpu.time";

  /** Micrometer's name of the gauge it renders as {@code system_cpu_count}. */
  static final String SYSTEM_CPU_COUNT = "system.cpu.count";

  /** The replacement: {@code system_cpus_available}. */
  public static final String SYSTEM_CPUS_AVAILABLE = "system.cpus.available";

  /** The replacement: {@code process_cpu_seconds_total} (base unit seconds). */
  public static final String PROCESS_CPU = "process.cpu";

  /** HELP text of the meters registered without a description, by Micrometer name. */
  static final Map<String, String> HELP =
      Map.ofEntries(
          Map.entry(MetricNames.DECISIONS, "Admission decisions by pool, class, tier and reason"),
          Map.entry(
              MetricNames.DECISION_LATENCY,
              "Time Sluice took to decide a request, by phase and decision"),
          Map.entry(
              MetricNames.SHADOW_DECISIONS,
              "Shadow mode: requests admitted that enforcement would have refused or queued"),
          Map.entry(MetricNames.PERMITS_RELEASED, "Permits released, by pool, class and outcome"),
          Map.entry(
              MetricNames.PERMIT_HOLD, "How long admitted requests held their permit (service)"),
          Map.entry(
              MetricNames.RESPONSE_END_UNSEEN,
              "Admitted requests whose response end Sluice cannot see, by pool and cause"),
          Map.entry(
              MetricNames.TOKENS_ESTIMATED, "Estimated tokens per request, by pool and direction"),
          Map.entry(
              MetricNames.TOKENS_ACTUAL, "Tokens the upstream reported, by pool and direction"),
          Map.entry(
              MetricNames.TOKENS_CHARGED,
              "Tokens charged to tenants when a request ended, by the rule that set them"),
          Map.entry(MetricNames.OUTPUT_OVERRUNS, "Answers that streamed past their output reserve"),
          Map.entry(
              MetricNames.OUTPUT_OVERRUN_WORK,
              "Work units added to pools by answers that streamed past their output reserve"),
          Map.entry(
              MetricNames.ESTIMATE_FALLBACKS,
              "Estimates that fell back to a cheaper method, by cause"),
          Map.entry(
              MetricNames.RESERVE_DECISIONS,
              "Output reserves chosen per request, by pool and the rule that chose"),
          Map.entry(MetricNames.RETRY_AFTER, "Retry-After seconds given with refusals, by reason"),
          Map.entry(
              MetricNames.UPSTREAM_RESPONSES,
              "Upstream responses to admitted requests, by pool and status (429, 503, or class)"),
          Map.entry(MetricNames.STREAM_ERRORS, "ext_proc streams that ended in an error, by cause"),
          Map.entry(
              MetricNames.STREAMS_UNDECIDED,
              "ext_proc streams that ended before a decision, by phase and how they ended"),
          Map.entry(
              MetricNames.LOCAL_REPLIES,
              "Local replies of filters before ext_proc passed on the response path, by status"),
          Map.entry(
              MetricNames.CONFIG_RELOADS, "Policy file reloads, by result (success, failure)"),
          Map.entry(MetricNames.WARMUP_CALLS, "Warm-up calls at start, by kind and result"),
          Map.entry(
              MetricNames.OVERRIDES_SENT,
              "override_message_timeout messages sent to hold queued requests, by pool"),
          Map.entry(MetricNames.QUEUE_WAIT, "Time queued requests waited, by outcome"),
          Map.entry(
              MetricNames.QUEUE_WAIT_PREDICTED, "Predicted queue wait of requests when queued"),
          Map.entry(MetricNames.DEGRADED, "Requests degraded to a cheaper rung, by rung"),
          Map.entry(MetricNames.DEGRADE_SKIPPED, "Degrade rungs skipped for a request, by cause"),
          Map.entry(
              MetricNames.QUOTA_STORE_FAILURES,
              "Tenant quota store calls that failed, by the failure mode applied"),
          Map.entry(
              MetricNames.QUOTA_RECONCILED,
              "Tokens refunded to or charged from tenant buckets at reconciliation"),
          Map.entry(MetricNames.TENANT_SLOTS, "Tenant slots asked of the shared store, by result"),
          Map.entry(
              MetricNames.FANOUT_WORK, "Fan-out work units admitted requests added, by source"),
          Map.entry(
              MetricNames.GRPC_TRANSPORT_REFUSALS,
              "gRPC connections or streams refused by the transport guards, by cause"),
          Map.entry(
              MetricNames.STORE_LATE_WRITES_UNDONE,
              "Store writes that landed after their call timed out and were taken back"),
          Map.entry("sluice.rls.calls", "Rate limit service calls, by result"),
          Map.entry("sluice.rls.config.loaded", "1 once a rate limit config has been loaded"),
          Map.entry("sluice.rls.store.errors", "Rate limit store calls that failed"),
          Map.entry(
              "sluice.rls.store.failure_mode",
              "Limits decided by their failure mode because the store failed, by mode"),
          Map.entry("sluice.rls.config.reloads", "Rate limit config reloads, by result"),
          Map.entry("sluice.rls.total_hits", "Hits counted per rate limit, by domain and key"),
          Map.entry("sluice.rls.over_limit", "Hits over the limit, by domain and key"),
          Map.entry("sluice.rls.near_limit", "Hits near the limit, by domain and key"),
          Map.entry("sluice.rls.within_limit", "Hits within the limit, by domain and key"),
          Map.entry(
              "sluice.rls.shadow_mode",
              "Over-limit hits let through by shadow mode, by domain and key"),
          Map.entry(
              "sluice.rls.global_shadow_mode",
              "Over-limit calls let through by the global shadow mode"));

  /** Installs the filter on {@code registry}: before any meter is registered on it. */
  public static void install(MeterRegistry registry) {
    registry.config().meterFilter(FILTER);
  }

  private static final MeterFilter FILTER =
      new MeterFilter() {
        @Override
        public MeterFilterReply accept(Meter.Id id) {
          return PROCESS_CPU_TIME.equals(id.getName())
              ? MeterFilterReply.DENY
              : MeterFilterReply.NEUTRAL;
        }

        @Override
        public Meter.Id map(Meter.Id id) {
          Meter.Id out =
              SYSTEM_CPU_COUNT.equals(id.getName()) ? id.withName(SYSTEM_CPUS_AVAILABLE) : id;
          String description = out.getDescription();
          if (description == null || description.isBlank()) {
            String help = help(out.getName());
            if (help != null) {
              out =
                  new Meter.Id(
                      out.getName(),
                      io.micrometer.core.instrument.Tags.of(out.getTagsAsIterable()),
                      out.getBaseUnit(),
                      help,
                      out.getType());
            }
          }
          return out;
        }
      };

  /** The HELP text of a meter registered without one, or null. */
  static @Nullable String help(String name) {
    return HELP.get(name);
  }
}
