package io.sluice.bootstrap;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.config.ConfigException;
import io.sluice.config.ConfigLoader;
import io.sluice.config.ConfigWriter;
import io.sluice.config.SluiceConfig;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * {@code server.admin.control}: the state-changing admin routes (the rate limit service's {@code
 * POST /json}) on the admin port to loopback callers only (default), on a listener of their own
 * (loopback by default) and then not on the admin port, or nowhere.
 */
class AdminControlListenerTest {
  private static final HttpClient HTTP =
      HttpClient.newBuilder()
          .version(HttpClient.Version.HTTP_1_1)
          .connectTimeout(Duration.ofSeconds(5))
          .build();
  private static final Map<String, String> LOCAL =
      Map.of("GRPC_PORT", "0", "PORT", "0", "GRPC_HOST", "127.0.0.1", "HOST", "127.0.0.1");
  private static final String RLS_REQUEST =
      "{\"domain\":\"sluice\",\"descriptors\":[{\"entries\":[{\"key\":\"tenant\",\"value\":\"a\"}]}]}";

  private static String policy(String control) {
    return ConfigLoader.embeddedDefaultYaml()
        + "\nserver: {warmup: {enabled: false}"
        + (control.isEmpty() ? "" : ", admin: {control: " + control + "}")
        + "}\n";
  }

  private static SluiceServer start(String control) throws Exception {
    return SluiceServer.start(Main.withEnv(ConfigLoader.parse(policy(control)), LOCAL));
  }

  private static HttpResponse<String> post(InetSocketAddress at, String path) throws Exception {
    return HTTP.send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + at.getPort() + path))
            .timeout(Duration.ofSeconds(10))
            .POST(HttpRequest.BodyPublishers.ofString(RLS_REQUEST))
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private static HttpResponse<String> get(InetSocketAddress at, String path) throws Exception {
    return HTTP.send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + at.getPort() + path))
            .timeout(Duration.ofSeconds(10))
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  /**
   * The rate limit service answered (the embedded default loads no descriptors, so it answers its
   * own 500 "no config"), not the admin server's 404, 403 or 405.
   */
  private static void assertReachedTheRateLimitService(HttpResponse<String> r) {
    assertThat(r.statusCode()).as("POST /json: " + r.body()).isNotIn(403, 404, 405);
    assertThat(r.body()).doesNotContain("not found").doesNotContain("loopback");
  }

  @Test
  void default_jsonOnTheAdminPort_loopbackOnly_noListenerOfItsOwn() throws Exception {
    try (SluiceServer s = start("")) {
      assertThat(s.adminControlAddress()).isNull();
      assertReachedTheRateLimitService(post(s.adminAddress(), "/json"));
      assertThat(get(s.adminAddress(), "/").body()).contains("/json").contains("loopback");
    }
  }

  @Test
  void ownPort_jsonOnlyThere_onLoopbackByDefault_theAdminPortAnswers404() throws Exception {
    try (SluiceServer s = start("{port: 0}")) {
      InetSocketAddress control = s.adminControlAddress();
      assertThat(control).isNotNull();
      assertThat(control.getAddress().isLoopbackAddress()).as("bound to loopback").isTrue();
      assertThat(control.getPort()).isNotEqualTo(s.adminPort());
      assertReachedTheRateLimitService(post(control, "/json"));
      assertThat(post(s.adminAddress(), "/json").statusCode())
          .as("POST /json on the admin port")
          .isEqualTo(404);
      assertThat(get(s.adminAddress(), "/").body()).doesNotContain("/json");
      // the control listener serves the state-changing routes and its index, nothing else
      assertThat(get(control, "/").body()).contains("/json");
      assertThat(get(control, "/metrics").statusCode()).isEqualTo(404);
      assertThat(get(control, "/json").statusCode()).isEqualTo(405);
      // the rest of the admin port is as before
      assertThat(get(s.adminAddress(), "/healthz").statusCode()).isEqualTo(200);
      assertThat(get(s.adminAddress(), "/healthcheck").statusCode()).isEqualTo(200);
    }
  }

  @Test
  void disabled_jsonNowhere() throws Exception {
    try (SluiceServer s = start("{enabled: false, port: 0}")) {
      assertThat(s.adminControlAddress()).isNull();
      assertThat(post(s.adminAddress(), "/json").statusCode()).isEqualTo(404);
      assertThat(get(s.adminAddress(), "/healthcheck").statusCode()).isEqualTo(200);
    }
  }

  @Test
  void portTaken_namesTheControlSettings_andTheAdminPortIsGivenBack() throws Exception {
    try (ServerSocket taken = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      assertThatThrownBy(() -> start("{port: " + taken.getLocalPort() + "}"))
          .isInstanceOf(PortBindException.class)
          .hasMessageContaining("admin control HTTP")
          .hasMessageContaining("server.admin.control.port");
    }
  }

  private static String yaml(SluiceConfig c) throws Exception {
    return new com.fasterxml.jackson.databind.ObjectMapper(
            new com.fasterxml.jackson.dataformat.yaml.YAMLFactory())
        .writeValueAsString(ConfigWriter.tree(c));
  }

  @Test
  void config_defaults_roundTrip_andValidation() throws Exception {
    SluiceConfig.AdminControl d = ConfigLoader.parse(policy("")).server().adminControl();
    assertThat(d).isEqualTo(SluiceConfig.AdminControl.DEFAULTS);
    assertThat(d.enabled()).isTrue();
    assertThat(d.host()).isEqualTo("127.0.0.1");
    assertThat(d.ownListener()).isFalse();
    SluiceConfig set = ConfigLoader.parse(policy("{host: 0.0.0.0, port: 9091}"));
    assertThat(set.server().adminControl())
        .isEqualTo(new SluiceConfig.AdminControl(true, "0.0.0.0", 9091));
    assertThat(ConfigLoader.parse(yaml(set)).server().adminControl())
        .isEqualTo(set.server().adminControl());
    assertThat(ConfigLoader.parse(yaml(ConfigLoader.parse(policy("")))).server().adminControl())
        .isEqualTo(SluiceConfig.AdminControl.DEFAULTS);
    assertThatThrownBy(() -> ConfigLoader.parse(policy("{port: 70000}")))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("server.admin.control.port");
    assertThatThrownBy(() -> ConfigLoader.parse(policy("{bind: x}")))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("server.admin.control");
  }
}
