package io.sluice.e2e;

import static io.sluice.e2e.SluiceEnvoyHarness.chat;
import static io.sluice.e2e.SluiceEnvoyHarness.chatBody;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import io.sluice.emulator.HttpResult;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Prometheus hygiene (docs/metrics.md, "Conventions"), checked with Prometheus' own tool: {@code
 * promtool check metrics} on a scrape of {@code /metrics} after traffic, {@code promtool check
 * rules} on the shipped PrometheusRule's groups and {@code promtool test rules} on its unit tests
 * ({@code k8s/tests/prometheusrule.test.yaml}); and every series an alert rate()s exists from the
 * start, at zero. The promtool tests are skipped when promtool is not installed ({@code .ci/run}
 * installs Debian's {@code prometheus} package, which carries it).
 */
@Timeout(60)
class PromtoolE2eTest {
  static final Path ROOT = Path.of(System.getProperty("user.dir")).resolve("..").normalize();
  static final Path RULES = ROOT.resolve("k8s/base/prometheusrule.yaml");
  static final Path RULE_TESTS = ROOT.resolve("k8s/tests/prometheusrule.test.yaml");
  private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());

  /**
   * Series alerts read that exist only while their feature is on (a shared store, budgets, retry
   * control, an adaptive or shadow pool, a complete answer's format, a rate limit config): not in
   * the e2e policy.
   */
  static final Set<String> FEATURE_SERIES =
      Set.of(
          "sluice_budget_threshold_crossings_total",
          "sluice_shadow_decisions_total",
          "sluice_pool_capacity_changes_total",
          "sluice_attempts_total",
          "sluice_tokens_actual_to_estimate_bucket",
          "sluice_tokens_actual_to_estimate_count",
          "sluice_replica_share_renewals_total",
          // background intake and MCP routes (off in the e2e policy): from the first backlog read /
          // the first MCP route of a snapshot on
          "sluice_intake_expired_total",
          "sluice_mcp_tool_calls_total",
          "sluice_mcp_tool_queue_wait_seconds_bucket",
          "sluice_mcp_tool_service_seconds_bucket",
          // the permit API (off in the e2e policy): from a pool's first acquire / lease end
          "sluice_permit_acquires_total",
          "sluice_permit_lease_expiries_total",
          "sluice_permit_releases_total",
          // from the first rate limit config loaded on (none in the e2e policy)
          "sluice_rls_config_reloads_total");

  @TempDir Path dir;
  private SluiceEnvoyHarness h;

  @AfterEach
  void tearDown() {
    if (h != null) {
      h.close();
    }
  }

  /** promtool from the PATH, or null. */
  static Path promtool() {
    for (String d : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
      Path p = Path.of(d, "promtool");
      if (Files.isExecutable(p)) {
        return p;
      }
    }
    return null;
  }

  /** Runs promtool with {@code args} in {@link #dir}, {@code stdin} piped in; exit code, output. */
  private Map.Entry<Integer, String> run(String stdin, String... args) throws Exception {
    Path tool = promtool();
    assumeTrue(tool != null, "promtool not installed (apt-get install prometheus)");
    List<String> cmd = new ArrayList<>();
    cmd.add(tool.toString());
    cmd.addAll(List.of(args));
    Path in = dir.resolve("stdin.txt");
    Files.writeString(in, stdin == null ? "" : stdin);
    Process p =
        new ProcessBuilder(cmd)
            .directory(dir.toFile())
            .redirectErrorStream(true)
            .redirectInput(in.toFile())
            .start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(30, TimeUnit.SECONDS)).as("promtool finished").isTrue();
    return Map.entry(p.exitValue(), out);
  }

  private String scrape() throws Exception {
    return java.net.http.HttpClient.newHttpClient()
        .send(
            java.net.http.HttpRequest.newBuilder(
                    java.net.URI.create("http://127.0.0.1:" + h.server.adminPort() + "/metrics"))
                .build(),
            java.net.http.HttpResponse.BodyHandlers.ofString())
        .body();
  }

  @Test
  void metricsAfterTraffic_passPromtoolCheckMetrics() throws Exception {
    assumeTrue(promtool() != null, "promtool not installed");
    h = SluiceEnvoyHarness.start(Policy.base());
    for (int i = 0; i < 4; i++) {
      HttpResult r = h.send(chat(chatBody(50, i % 2 == 0)).build());
      assertThat(r.status()).isEqualTo(200);
    }
    // a refusal (over the class's output cap does not refuse; an unknown tier does not either):
    // a body too large for limits.maxBodyBytes is refused 413 before the pool decides
    h.send(
        chat("{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\",\"content\":\""
                + "x".repeat(70_000)
                + "\"}]}")
            .build());
    String metrics = scrape();
    Map.Entry<Integer, String> r = run(metrics, "check", "metrics");
    assertThat(r.getValue()).as("promtool check metrics").isEmpty();
    assertThat(r.getKey()).isZero();
  }

  @Test
  void rules_passPromtoolCheckRulesAndTheirUnitTests() throws Exception {
    assumeTrue(promtool() != null, "promtool not installed");
    JsonNode rule = YAML.readTree(RULES.toFile());
    ObjectNode groups = YAML.createObjectNode();
    groups.set("groups", rule.path("spec").path("groups"));
    Files.writeString(dir.resolve("sluice-rules.yaml"), YAML.writeValueAsString(groups));
    Files.copy(RULE_TESTS, dir.resolve("prometheusrule.test.yaml"));

    Map.Entry<Integer, String> check = run(null, "check", "rules", "sluice-rules.yaml");
    assertThat(check.getKey()).as(check.getValue()).isZero();
    assertThat(check.getValue()).contains("SUCCESS");
    Map.Entry<Integer, String> test = run(null, "test", "rules", "prometheusrule.test.yaml");
    assertThat(test.getKey()).as(test.getValue()).isZero();
    assertThat(test.getValue()).contains("SUCCESS");
  }

  private static final Pattern RATED =
      Pattern.compile("(?:rate|increase)\\((sluice_[a-z_]+)(\\{[^}]*})?\\[");
  private static final Pattern MATCHER = Pattern.compile("(\\w+)(=~|=)\"([^\"]*)\"");
  private static final Pattern SAMPLE = Pattern.compile("([a-z_:]+)(\\{[^}]*})? .*");
  private static final Pattern LABEL = Pattern.compile("(\\w+)=\"([^\"]*)\"");

  /**
   * Every selector a shipped alert rate()s or increase()s matches a series of a fresh server's
   * scrape (before any request), but for the features the default policy leaves off.
   */
  @Test
  void everySeriesAnAlertRates_existsFromTheStartAtZero() throws Exception {
    h = SluiceEnvoyHarness.start(Policy.base());
    List<Map<String, String>> samples = new ArrayList<>();
    for (String line : scrape().split("\n")) {
      Matcher m = SAMPLE.matcher(line);
      if (line.startsWith("#") || !m.matches()) {
        continue;
      }
      Map<String, String> labels = new LinkedHashMap<>();
      labels.put("__name__", m.group(1));
      if (m.group(2) != null) {
        Matcher l = LABEL.matcher(m.group(2));
        while (l.find()) {
          labels.put(l.group(1), l.group(2));
        }
      }
      samples.add(labels);
    }
    List<String> missing = new ArrayList<>();
    int checked = 0;
    for (JsonNode group : YAML.readTree(RULES.toFile()).path("spec").path("groups")) {
      for (JsonNode rule : group.path("rules")) {
        Matcher m = RATED.matcher(rule.path("expr").asText());
        while (m.find()) {
          String name = m.group(1);
          if (FEATURE_SERIES.contains(name)) {
            continue;
          }
          checked++;
          List<String[]> matchers = new ArrayList<>();
          if (m.group(2) != null) {
            Matcher mm = MATCHER.matcher(m.group(2));
            while (mm.find()) {
              matchers.add(new String[] {mm.group(1), mm.group(2), mm.group(3)});
            }
          }
          boolean found =
              samples.stream()
                  .anyMatch(
                      s ->
                          name.equals(s.get("__name__"))
                              && matchers.stream()
                                  .allMatch(
                                      x -> {
                                        String v = s.getOrDefault(x[0], "");
                                        return x[1].equals("=") ? v.equals(x[2]) : v.matches(x[2]);
                                      }));
          if (!found) {
            missing.add(
                rule.path("alert").asText()
                    + ": "
                    + name
                    + java.util.Objects.toString(m.group(2), ""));
          }
        }
      }
    }
    assertThat(checked).isGreaterThan(10);
    assertThat(missing).as("alert series absent from a fresh scrape").isEmpty();
  }
}
