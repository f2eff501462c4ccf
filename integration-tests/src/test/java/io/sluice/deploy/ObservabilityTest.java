package io.sluice.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The Grafana dashboard and the PrometheusRule may only query metrics Sluice publishes, each of
 * them documented in docs/metrics.md, and every alert must have its runbook section in
 * docs/operations.md.
 */
class ObservabilityTest {

  static final Path ROOT = Path.of(System.getProperty("user.dir")).resolve("..").normalize();
  static final Path DASHBOARD = ROOT.resolve("docs/grafana/sluice-dashboard.json");
  static final Path RULES = ROOT.resolve("k8s/base/prometheusrule.yaml");
  static final Path RUNBOOK = ROOT.resolve("docs/operations.md");
  static final Path METRICS_DOC = ROOT.resolve("docs/metrics.md");
  static final Path RATELIMIT_DOC = ROOT.resolve("docs/ratelimit.md");

  /**
   * Prometheus names of Sluice's metrics (docs/metrics.md, observability.MetricNames, and the rate
   * limit service's RlsMetrics); queue metrics are those of the bounded fair queue.
   */
  static final Set<String> METRICS =
      Set.of(
          "sluice_decisions_total",
          "sluice_shadow_decisions_total",
          // retries (issue 19)
          "sluice_attempts_total",
          "sluice_retry_amplification",
          "sluice_retries_total",
          "sluice_retry_behaviour_total",
          "sluice_retry_after_success_total",
          "sluice_duplicate_operations_total",
          "sluice_retry_budget_tokens",
          "sluice_retry_store_failures_total",
          // budgets over billing periods
          "sluice_budget_reserved_total",
          "sluice_budget_spent_total",
          "sluice_budget_refusals_total",
          "sluice_budget_threshold_crossings_total",
          "sluice_budget_disclosed_total",
          "sluice_budget_waits_total",
          "sluice_budget_store_failures_total",
          "sluice_budget_write_back_total",
          "sluice_budget_write_back_owed",
          "sluice_budget_cut_total",
          // the permit API (docs/permits.md)
          "sluice_permit_acquires_total",
          "sluice_permit_wait_seconds",
          "sluice_permit_held",
          "sluice_permit_lease_expiries_total",
          "sluice_permit_releases_total",
          "sluice_permit_actual_work_total",
          // MCP tools as pools
          "sluice_mcp_tool_calls_total",
          "sluice_mcp_tool_in_flight",
          "sluice_mcp_tool_limit",
          "sluice_mcp_tool_queue_wait_seconds",
          "sluice_mcp_tool_service_seconds",
          // background intake
          "sluice_intake_requests_total",
          "sluice_intake_dispatch_total",
          "sluice_intake_backlog_jobs",
          "sluice_intake_backlog_oldest_age_seconds",
          "sluice_intake_backlog_drain_work_units_per_second",
          "sluice_intake_expired_total",
          "sluice_decision_latency_seconds",
          "sluice_replica_share_work_units",
          "sluice_replica_share_requests",
          "sluice_replica_share_demand_work_units",
          "sluice_replica_share_demand_requests",
          "sluice_replica_share_seconds_since_grant",
          "sluice_replica_share_peers",
          "sluice_replica_share_mode",
          "sluice_replica_share_renewals_total",
          "sluice_learned_share_exchanges_total",
          "sluice_learned_share_keys_adopted_total",
          "sluice_replica_share_rebalances_total",
          "sluice_replica_share_gathered_total",
          "sluice_replica_share_idle_work_units",
          "sluice_pool_work_in_flight",
          "sluice_pool_requests_in_flight",
          "sluice_pool_capacity",
          "sluice_pool_capacity_effective",
          "sluice_pool_capacity_changes_total",
          "sluice_pool_upstream_pause_seconds",
          "sluice_pool_latency_ratio",
          "sluice_pool_latency_baseline_seconds",
          "sluice_pool_completion_rate",
          "sluice_permits_released_total",
          "sluice_permit_hold_seconds",
          "sluice_response_end_unseen_total",
          "sluice_permits_tail_held",
          "sluice_pool_service_time_source",
          "sluice_tokens_estimated",
          "sluice_tokens_actual",
          "sluice_tokens_actual_to_estimate",
          "sluice_tokens_charged_total",
          "sluice_output_overruns_total",
          "sluice_output_overrun_work_units_total",
          "sluice_pool_work_overrun",
          "sluice_reserve_decisions_total",
          "sluice_reserve_learned_keys",
          "sluice_reserve_learned_evictions_total",
          "sluice_fanout_work_units_total",
          "sluice_workflows_in_flight",
          "sluice_estimate_fallbacks_total",
          "sluice_estimate_token_cache_lookups_total",
          "sluice_estimate_token_cache_chars",
          "sluice_estimate_token_cache_entries",
          "sluice_retry_after",
          "sluice_upstream_responses_total",
          "sluice_extproc_streams_open",
          "sluice_extproc_streams_total",
          "sluice_extproc_stream_errors_total",
          "sluice_config_reloads_total",
          "sluice_ready",
          "sluice_warmup_calls_total",
          "sluice_warmup_duration_seconds",
          "sluice_health_heap_after_gc_ratio",
          "sluice_health_heap_exhausted",
          "sluice_queue_depth",
          "sluice_queue_work",
          "sluice_queue_oldest_age_seconds",
          "sluice_queue_wait_seconds",
          "sluice_queue_wait_predicted_seconds",
          "sluice_class_queue_wait_limit_seconds",
          "sluice_time_to_first_token_seconds",
          "sluice_time_per_output_token_seconds",
          "sluice_answers_total",
          "sluice_wasted_tokens_total",
          "sluice_degraded_total",
          "sluice_degrade_skipped_total",
          "sluice_rls_total_hits_total",
          "sluice_rls_over_limit_total",
          "sluice_rls_near_limit_total",
          "sluice_rls_within_limit_total",
          "sluice_rls_store_errors_total",
          "sluice_rls_store_healthy",
          "sluice_rls_store_memory_bytes",
          "sluice_rls_store_memory_max_bytes",
          "sluice_rls_store_memory_evicted_hits_total",
          "sluice_rls_config_reloads_total");

  /** Suffixes Prometheus adds to summaries and timers. */
  static final List<String> SUFFIXES = List.of("_count", "_sum", "_max", "_bucket");

  static final Pattern METRIC = Pattern.compile("sluice_[a-z_]+");
  static final ObjectMapper JSON = new ObjectMapper();

  @Test
  void dashboard_structure_isImportableWithVariables() throws IOException {
    JsonNode dash = JSON.readTree(DASHBOARD.toFile());
    assertThat(dash.path("schemaVersion").asInt()).isGreaterThanOrEqualTo(36);
    Set<String> variables = new HashSet<>();
    dash.at("/templating/list").forEach(v -> variables.add(v.path("name").asText()));
    assertThat(variables).contains("DS_PROMETHEUS", "pool", "class");
    Set<Integer> ids = new HashSet<>();
    for (JsonNode panel : dash.path("panels")) {
      assertThat(ids.add(panel.path("id").asInt())).as("unique panel id").isTrue();
      assertThat(panel.path("gridPos").path("w").asInt()).isBetween(1, 24);
      if (panel.path("type").asText().equals("row")) {
        continue;
      }
      assertThat(panel.at("/datasource/uid").asText()).isEqualTo("${DS_PROMETHEUS}");
      assertThat(panel.path("targets")).isNotEmpty();
    }
  }

  @Test
  void dashboard_panels_coverTheOperatorsQuestions() throws IOException {
    JsonNode dash = JSON.readTree(DASHBOARD.toFile());
    Set<String> titles = new TreeSet<>();
    dash.path("panels").forEach(p -> titles.add(p.path("title").asText().toLowerCase(Locale.ROOT)));
    assertThat(String.join("|", titles))
        .contains("decisions/s")
        .contains("shed rate")
        .contains("capacity use")
        .contains("requests in flight")
        .contains("queue depth")
        .contains("queue wait")
        .contains("decision latency")
        .contains("retry-after")
        .contains("estimate vs actual")
        .contains("upstream 429")
        .contains("ext_proc streams")
        .contains("rls over-limit")
        .contains("replica share: work units granted per replica vs pool capacity")
        .contains("replica share: request slots granted")
        .contains("replica share demand")
        .contains("replica share renewals, failures and rebalances")
        .contains("seconds since last share grant")
        .contains("replica share mode")
        .contains("would have shed")
        .contains("would-have-shed % vs shed %");
  }

  /** The replica shares row reads every {@code sluice_replica_share_*} metric Sluice registers. */
  @Test
  void dashboard_replicaSharePanels_useEveryShareMetric() throws IOException {
    JsonNode dash = JSON.readTree(DASHBOARD.toFile());
    StringBuilder shareExprs = new StringBuilder();
    for (JsonNode p : dash.path("panels")) {
      if (p.path("title").asText().toLowerCase(Locale.ROOT).contains("share")) {
        p.path("targets").forEach(t -> shareExprs.append(t.path("expr").asText()).append('\n'));
      }
    }
    Set<String> shareMetrics = new TreeSet<>();
    METRICS.stream().filter(m -> m.startsWith("sluice_replica_share_")).forEach(shareMetrics::add);
    assertThat(shareMetrics).hasSize(11);
    shareMetrics.remove("sluice_replica_share_peers"); // /readyz and /debug/queues show the peers
    for (String metric : shareMetrics) {
      assertThat(shareExprs.toString()).as("a share panel reads " + metric).contains(metric + "{");
    }
    // the granted work is drawn against the pool's capacity, the mode by its label
    assertThat(shareExprs.toString())
        .contains("sluice_pool_capacity{")
        .contains("mode=\"leased\"")
        .contains("mode=\"kept\"")
        .contains("mode=\"fallback\"")
        .contains("mode=\"refusing\"");
  }

  /**
   * Every {@code sluice_*} name the dashboard (panels and variables) and the alert rules query is
   * in docs/metrics.md, or, for the rate limit service's {@code sluice_rls_*} to which metrics.md
   * points, in docs/ratelimit.md's metrics table; and so is every name of {@link #METRICS}.
   */
  @Test
  void dashboardAndAlerts_everyMetric_isDocumented() throws IOException {
    JsonNode dash = JSON.readTree(DASHBOARD.toFile());
    List<String> exprs = new ArrayList<>();
    dash.path("panels")
        .forEach(p -> p.path("targets").forEach(t -> exprs.add(t.path("expr").asText())));
    dash.at("/templating/list").forEach(v -> exprs.add(v.path("definition").asText()));
    for (JsonNode group : KubeYaml.documents(RULES).get(0).at("/spec/groups")) {
      group.path("rules").forEach(r -> exprs.add(r.path("expr").asText()));
    }
    Set<String> documented = documentedMetrics();
    Set<String> used = new TreeSet<>();
    for (String expr : exprs) {
      Matcher m = METRIC.matcher(expr);
      while (m.find()) {
        used.add(m.group());
      }
    }
    assertThat(used).contains("sluice_replica_share_mode", "sluice_replica_share_renewals_total");
    assertThat(undocumented(used, documented)).as("not in docs/metrics.md").isEmpty();
    assertThat(undocumented(METRICS, documented)).as("METRICS not in docs/metrics.md").isEmpty();
  }

  @Test
  void undocumented_typoOrUnknownName_reported() throws IOException {
    Set<String> documented = documentedMetrics();
    assertThat(
            undocumented(
                List.of(
                    "sluice_replica_share_mode",
                    "sluice_replica_share_renewal_total",
                    "sluice_queue_wait_seconds_bucket",
                    "sluice_rls_over_limit_total",
                    "sluice_rls_overlimit_total"),
                documented))
        .containsExactly("sluice_replica_share_renewal_total", "sluice_rls_overlimit_total");
  }

  @Test
  void dashboard_everyExpression_usesOnlySluiceMetrics() throws IOException {
    JsonNode dash = JSON.readTree(DASHBOARD.toFile());
    List<String> exprs = new ArrayList<>();
    dash.path("panels")
        .forEach(p -> p.path("targets").forEach(t -> exprs.add(t.path("expr").asText())));
    dash.at("/templating/list").forEach(v -> exprs.add(v.path("definition").asText()));
    assertThat(exprs).hasSizeGreaterThan(12);
    assertThat(unknownMetrics(exprs)).isEmpty();
    assertThat(exprs).allMatch(e -> METRIC.matcher(e).find() || e.isEmpty());
  }

  @Test
  void prometheusRule_everyExpression_usesOnlySluiceMetricsAndHasARunbook() throws IOException {
    JsonNode rule = KubeYaml.documents(RULES).get(0);
    String runbook = Files.readString(RUNBOOK).toLowerCase(Locale.ROOT);
    List<String> exprs = new ArrayList<>();
    Set<String> alerts = new TreeSet<>();
    for (JsonNode group : rule.at("/spec/groups")) {
      for (JsonNode r : group.path("rules")) {
        exprs.add(r.path("expr").asText());
        String alert = r.path("alert").asText();
        alerts.add(alert);
        assertThat(r.at("/annotations/runbook").asText())
            .isEqualTo("docs/operations.md#" + alert.toLowerCase(Locale.ROOT));
        assertThat(runbook)
            .as("runbook section for " + alert)
            .contains("### " + alert.toLowerCase(Locale.ROOT));
        assertThat(r.at("/labels/severity").asText()).isIn("warning", "critical");
      }
    }
    assertThat(alerts)
        .contains(
            "SluiceCapacityHigh",
            "SluiceShedRateHigh",
            "SluiceShadowWouldShedHigh",
            "SluiceQueueWaitAboveServiceTime",
            "SluiceStreamErrors",
            "SluiceConfigReloadFailed",
            "SluiceRateLimitStoreErrors",
            "SluiceReplicaShareStale",
            "SluiceReplicaShareStoreDown",
            "SluiceReplicaShareRenewalFailures");
    assertThat(unknownMetrics(exprs)).isEmpty();
  }

  @Test
  void unknownMetrics_typoOrForeignName_reported() {
    assertThat(
            unknownMetrics(
                List.of(
                    "rate(sluice_decision_total[1m])",
                    "sluice_permit_hold_seconds_count",
                    "sluice_pool_capacity")))
        .containsExactly("sluice_decision_total");
  }

  /**
   * The Prometheus names docs/metrics.md writes in code spans, and those of docs/ratelimit.md's
   * metrics table (its Prometheus names, or Micrometer's dotted ones: dots become underscores,
   * counters end in {@code _total}).
   */
  static Set<String> documentedMetrics() throws IOException {
    Set<String> names = new TreeSet<>();
    Matcher m = Pattern.compile("`(sluice_[a-z_]+)").matcher(Files.readString(METRICS_DOC));
    while (m.find()) {
      names.add(m.group(1));
    }
    Matcher row =
        Pattern.compile("(?m)^\\| `(sluice\\.rls\\.[a-z_.]+)` \\| ([a-z]+)")
            .matcher(Files.readString(RATELIMIT_DOC));
    while (row.find()) {
      String name = row.group(1).replace('.', '_');
      names.add(row.group(2).equals("counter") ? name + "_total" : name);
    }
    // the table in Prometheus names (as the docs now write every metric)
    Matcher prom =
        Pattern.compile("(?m)^\\| `(sluice_rls_[a-z_]+)` \\|")
            .matcher(Files.readString(RATELIMIT_DOC));
    while (prom.find()) {
      names.add(prom.group(1));
    }
    return names;
  }

  /** The names of {@code used} that are not documented, histogram suffixes aside. */
  static Set<String> undocumented(Collection<String> used, Set<String> documented) {
    Set<String> out = new TreeSet<>();
    for (String name : used) {
      boolean found = documented.contains(name);
      for (String suffix : SUFFIXES) {
        found |=
            name.endsWith(suffix)
                && documented.contains(name.substring(0, name.length() - suffix.length()));
      }
      if (!found) {
        out.add(name);
      }
    }
    return out;
  }

  static Set<String> unknownMetrics(List<String> exprs) {
    Set<String> unknown = new TreeSet<>();
    for (String expr : exprs) {
      Matcher m = METRIC.matcher(expr);
      while (m.find()) {
        if (!known(m.group())) {
          unknown.add(m.group());
        }
      }
    }
    return unknown;
  }

  private static boolean known(String name) {
    if (METRICS.contains(name)) {
      return true;
    }
    for (String suffix : SUFFIXES) {
      if (name.endsWith(suffix)
          && METRICS.contains(name.substring(0, name.length() - suffix.length()))) {
        return true;
      }
    }
    return false;
  }
}
