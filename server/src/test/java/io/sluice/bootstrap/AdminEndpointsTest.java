package io.sluice.bootstrap;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.config.ConfigLoader;
import io.sluice.config.ConfigWriterTest;
import io.sluice.config.SluiceConfig;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code GET /} lists the admin endpoints; {@code /config} can be fed back to validate. */
class AdminEndpointsTest {
  private static final HttpClient HTTP = HttpClient.newHttpClient();
  private static final Map<String, String> LOCAL =
      Map.of("GRPC_PORT", "0", "PORT", "0", "GRPC_HOST", "127.0.0.1", "HOST", "127.0.0.1");

  @TempDir Path dir;

  private static HttpResponse<String> get(int port, String path) throws Exception {
    return HTTP.send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private static SluiceConfig quick(String yaml) {
    return Main.withEnv(
        ConfigLoader.parse(yaml + "\n"), LOCAL); // warm-up off: these tests need no warm path
  }

  @Test
  void root_listsEveryAdminEndpoint() throws Exception {
    try (SluiceServer server =
        SluiceServer.start(
            quick(ConfigLoader.embeddedDefaultYaml() + "\nserver: {warmup: {enabled: false}}"))) {
      HttpResponse<String> r = get(server.adminPort(), "/");
      assertThat(r.statusCode()).isEqualTo(200);
      assertThat(r.body())
          .startsWith("Sluice admin endpoints:")
          .contains("/metrics")
          .contains("/healthz")
          .contains("/readyz")
          .contains("/config")
          .contains("/debug/queues")
          .contains("/debug/estimates")
          .contains("/healthcheck")
          .contains("/rlconfig")
          .contains("/json");
      // /config answers JSON unless asked for YAML: the list says so
      assertThat(r.body())
          .contains(
              "the effective config, redacted: JSON, or YAML with ?format=yaml; either validates"
                  + " as a policy file")
          .doesNotContain("policy file's syntax");
      assertThat(get(server.adminPort(), "/config").headers().firstValue("Content-Type"))
          .hasValue("application/json");
      HttpResponse<String> json = get(server.adminPort(), "/?format=json");
      assertThat(json.headers().firstValue("Content-Type")).hasValue("application/json");
      assertThat(json.body()).contains("{\"path\": \"/metrics\", \"description\": \"Prometheus");
      assertThat(get(server.adminPort(), "/nope").statusCode()).isEqualTo(404);
    }
  }

  @Test
  void config_embeddedDefault_inBothFormats_validatesWithZeroErrors() throws Exception {
    try (SluiceServer server = SluiceServer.start(quick(ConfigLoader.embeddedDefaultYaml()))) {
      for (String q : new String[] {"", "?format=json", "?format=yaml"}) {
        HttpResponse<String> r = get(server.adminPort(), "/config" + q);
        assertThat(r.statusCode()).isEqualTo(200);
        assertValidates(r.body());
        assertThat(ConfigLoader.parse(r.body()).classes()).isEqualTo(server.config().classes());
      }
      assertThat(
              get(server.adminPort(), "/config?format=yaml").headers().firstValue("Content-Type"))
          .hasValue("application/yaml; charset=utf-8");
      HttpResponse<String> bad = get(server.adminPort(), "/config?format=xml");
      assertThat(bad.statusCode()).isEqualTo(400);
      assertThat(bad.body()).contains("format: xml (expected: json or yaml)");
    }
  }

  @Test
  void config_richPolicyWithCredentials_isRedactedAndStillValidates() throws Exception {
    String rich =
        ConfigWriterTest.RICH
            .replaceAll(
                "(?s)  grpc:.*?admittedIdleTimeout: 1h\n", "  grpc: {host: 127.0.0.1, port: 0}\n")
            .replace("admin: {host: 127.0.0.1, port: 9080}", "admin: {host: 127.0.0.1, port: 0}")
            .replace(
                "env: {BACKEND_TYPE: memory, RUNTIME_ROOT: /srv/rl}",
                "env: {BACKEND_TYPE: memory, REDIS_AUTH: hunter2-secret,"
                    + " REDIS_URL: 'redis://app:pw-s3cret@redis.example:6379'}");
    try (SluiceServer server = SluiceServer.start(quick(rich))) {
      for (String q : new String[] {"?format=json", "?format=yaml"}) {
        String body = get(server.adminPort(), "/config" + q).body();
        assertThat(body).doesNotContain("hunter2-secret").doesNotContain("pw-s3cret");
        assertThat(body).contains("***").contains("redis://app:***@redis.example:6379");
        assertValidates(body);
        SluiceConfig back = ConfigLoader.parse(body);
        assertThat(back.routes()).isEqualTo(server.config().routes());
        assertThat(back.signals()).isEqualTo(server.config().signals());
        assertThat(back.tenants()).isEqualTo(server.config().tenants());
        assertThat(back.rateLimit().env()).containsEntry("REDIS_AUTH", "***");
      }
      assertThat(get(server.adminPort(), "/config?format=yaml").body())
          .startsWith("# Sluice effective config")
          .contains("# Credentials are shown as \"***\"");
    }
  }

  private void assertValidates(String policy) throws Exception {
    Path f = Files.createTempFile(dir, "config", ".yaml");
    Files.writeString(f, policy);
    CommandLineTest.Run v = CommandLineTest.run("validate", f.toString());
    assertThat(v.err()).as(policy).doesNotContain("error");
    assertThat(v.code()).isZero();
  }
}
