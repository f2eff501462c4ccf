package io.sluice.bootstrap;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import io.sluice.config.ConfigLoader;
import io.sluice.config.SluiceConfig;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * Finding 3 of issue 13: credentials given in the policy ({@code rateLimit.env}) or the environment
 * never reach {@code /config}, {@code /readyz}, {@code /healthcheck}, {@code sluice validate} or a
 * start-up error.
 */
class SecretsRedactionTest {
  @TempDir Path dir;

  private static final HttpClient HTTP = HttpClient.newHttpClient();

  private static final String AUTH = "auth-s3cret-0001";
  private static final String SENTINEL = "sentinel-s3cret-0002";
  private static final String URL_PW = "url-s3cret-0003";
  private static final String TOKEN = "tok-s3cret-0004";

  private static HttpResponse<String> get(int port, String path) throws Exception {
    return HTTP.send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private static String policy(String rateLimitEnv) {
    return ConfigLoader.embeddedDefaultYaml()
            .replace("port: 8081", "port: 0")
            .replace("port: 8080", "port: 0")
            .replace("host: 0.0.0.0", "host: 127.0.0.1")
        + "\nrateLimit:\n  env:\n"
        + rateLimitEnv;
  }

  private static void assertNoSecret(String text) {
    assertThat(text)
        .doesNotContain(AUTH)
        .doesNotContain(SENTINEL)
        .doesNotContain(URL_PW)
        .doesNotContain(TOKEN);
  }

  @Test
  void config_redactsAuthPasswordsInUrlsAndSecretLookingKeys() throws Exception {
    Path rt = Files.createDirectories(dir.resolve("rt/config"));
    SluiceConfig c =
        ConfigLoader.parse(
            policy(
                "    BACKEND_TYPE: memory\n"
                    + "    RUNTIME_ROOT: "
                    + rt.getParent()
                    + "\n"
                    + "    REDIS_AUTH: "
                    + AUTH
                    + "\n"
                    + "    REDIS_SENTINEL_AUTH: "
                    + SENTINEL
                    + "\n"
                    + "    REDIS_URL: redis://app:"
                    + URL_PW
                    + "@redis.example:6379\n"
                    + "    SOME_API_TOKEN: "
                    + TOKEN
                    + "\n"));
    try (SluiceServer server = SluiceServer.start(c)) {
      String body = get(server.adminPort(), "/config").body();
      assertNoSecret(body);
      assertThat(body)
          .contains("\"REDIS_AUTH\" : \"***\"")
          .contains("\"REDIS_SENTINEL_AUTH\" : \"***\"")
          .contains("redis://app:***@redis.example:6379")
          .contains("\"BACKEND_TYPE\" : \"memory\"");
      assertNoSecret(get(server.adminPort(), "/readyz").body());
      assertNoSecret(get(server.adminPort(), "/healthcheck").body());
    }
  }

  @Test
  void startupError_badRedisUrlWithPassword_isAConfigErrorWithoutThePassword() {
    for (String url :
        new String[] {
          "user:" + URL_PW + "@redis.example", // no port: "expected host:port"
          "redis://:" + URL_PW + "@redis.example:6379", // sentinel needs master,host:port
        }) {
      SluiceConfig c =
          ConfigLoader.parse(
              policy(
                  "    BACKEND_TYPE: redis\n"
                      + "    REDIS_TYPE: "
                      + (url.startsWith("redis://") ? "sentinel" : "single")
                      + "\n"
                      + "    REDIS_URL: \""
                      + url
                      + "\"\n"));
      Throwable t = catchThrowable(() -> SluiceServer.start(c).close());
      assertThat(t).as(url).isNotNull();
      StringBuilder all = new StringBuilder();
      for (Throwable x = t; x != null; x = x.getCause()) {
        all.append(x).append('\n');
      }
      assertNoSecret(all.toString());
      assertThat(t).isInstanceOf(io.sluice.config.ConfigException.class);
      assertThat(t.getMessage()).contains("REDIS_URL").contains("***");
    }
  }

  @Test
  void settingsRecords_toString_neverPrintCredentials() {
    Map<String, String> env =
        Map.of(
            "REDIS_AUTH", "admin:" + AUTH,
            "REDIS_SENTINEL_AUTH", SENTINEL,
            "REDIS_URL", "redis://app:" + URL_PW + "@redis.example:6379");
    assertNoSecret(io.sluice.rls.config.RlsSettings.fromEnv(env).toString());
    var settings = io.sluice.bootstrap.StoreEnv.settings(env);
    assertNoSecret(settings.toString());
    assertThat(settings.redis().toString())
        .contains("url=redis://app:***@redis.example:6379")
        .contains("auth=***");
  }

  @Test
  void validate_neverPrintsASecretValue() throws Exception {
    Path f = dir.resolve("p.yaml");
    // A mapping where a string is expected: the error would print the value it got.
    Files.writeString(
        f,
        "pools: {p: {capacity: 10}}\nclasses: {c: {reservedShare: 1.0}}\n"
            + "rateLimit:\n  env:\n    REDIS_AUTH: {password: "
            + AUTH
            + "}\n    BACKEND_TYPE: redis\n    REDIS_URL: \"user:"
            + URL_PW
            + "@nohost\"\n");
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine cl = new CommandLine(new Main());
    cl.setOut(new PrintWriter(out));
    cl.setErr(new PrintWriter(err));
    int code = cl.execute("validate", f.toString());
    assertThat(code).isEqualTo(1);
    assertNoSecret(out + "\n" + err);
    assertThat(err.toString()).contains("rateLimit.env.REDIS_AUTH: *** (expected: a string)");
  }
}
