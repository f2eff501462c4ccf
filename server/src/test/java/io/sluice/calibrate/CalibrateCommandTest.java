package io.sluice.calibrate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetAddress;
import java.net.URI;
import java.net.UnknownHostException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** Options, the host rule and usage errors: nothing here sends a request. */
class CalibrateCommandTest {
  @TempDir Path dir;

  record Run(int exit, String out, String err) {}

  static Run run(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine cl = new CommandLine(new CalibrateCommand());
    cl.setOut(new PrintWriter(out, true));
    cl.setErr(new PrintWriter(err, true));
    int exit = cl.execute(args);
    return new Run(exit, out.toString(), err.toString());
  }

  @Test
  void nonLoopbackHost_isRefused_exit2_withTheFlagToPass() {
    Run r = run("--target", "https://api.example.com/v1/chat/completions");
    assertThat(r.exit()).isEqualTo(2);
    assertThat(r.err())
        .contains("refusing to load-test api.example.com: it is not a loopback address")
        .contains("--allow-host api.example.com")
        .contains("non-production replica");
    assertThat(r.out()).isEmpty();
  }

  @Test
  void allowHost_mustEqualTheTargetsHostExactly() {
    Run r =
        run(
            "--target",
            "https://api.example.com/v1/chat/completions",
            "--allow-host",
            "example.com");
    assertThat(r.exit()).isEqualTo(2);
    assertThat(r.err())
        .contains(
            "--allow-host example.com does not name it (it must equal the target's host exactly)");
    assertThat(Target.refusal(URI.create("https://api.example.com/v1"), "api.example.com"))
        .isNull();
    assertThat(Target.refusal(URI.create("https://API.example.com/v1"), "api.example.com"))
        .isNotNull();
  }

  @Test
  void allowHost_namingTheHost_passesTheCheck() throws Exception {
    CalibrateCommand c = new CalibrateCommand();
    new CommandLine(c)
        .parseArgs(
            "--target", "http://10.0.0.7:8000/v1/chat/completions", "--allow-host", "10.0.0.7");
    assertThat(c.options().target().uri().getHost()).isEqualTo("10.0.0.7");
  }

  @Test
  void loopbackLiterals_byTheirSpelling_localhostByItsAddresses() {
    assertThat(Target.isLoopback("127.0.0.1")).isTrue();
    assertThat(Target.isLoopback("127.1.2.3")).isTrue();
    assertThat(Target.isLoopback("localhost")).isTrue();
    assertThat(Target.isLoopback("LocalHost")).isTrue();
    assertThat(Target.isLoopback("::1")).isTrue();
    assertThat(Target.refusal(URI.create("http://[::1]:8000/v1/chat/completions"), null)).isNull();
    assertThat(Target.isLoopback("0.0.0.0")).isFalse();
    assertThat(Target.isLoopback("10.0.0.1")).isFalse();
    assertThat(Target.isLoopback("127.0.0.1.nip.io")).isFalse();
    assertThat(Target.isLoopback("localhost.example.com")).isFalse();
    assertThat(Target.isLoopback("127.0.0.300")).isFalse();
  }

  @Test
  void localhostNames_areResolved_andPassOnlyWhenEveryAddressIsLoopback() throws Exception {
    InetAddress loop = InetAddress.getByAddress("localhost", new byte[] {127, 0, 0, 1});
    InetAddress away = InetAddress.getByAddress("evil.localhost", new byte[] {10, 0, 0, 1});
    Target.Resolver table =
        h ->
            switch (h) {
              case "localhost", "api.localhost" -> new InetAddress[] {loop};
              case "evil.localhost" -> new InetAddress[] {away};
              case "mixed.localhost" -> new InetAddress[] {loop, away};
              default -> throw new UnknownHostException(h);
            };
    assertThat(Target.isLoopback("localhost", table)).isTrue();
    assertThat(Target.isLoopback("api.localhost", table)).isTrue();
    assertThat(Target.isLoopback("evil.localhost", table)).isFalse();
    assertThat(Target.isLoopback("mixed.localhost", table)).isFalse();
    assertThat(Target.isLoopback("gone.localhost", table)).isFalse();
    // literals are judged without any lookup
    assertThat(Target.isLoopback("127.0.0.2", table)).isTrue();
    assertThat(
            Target.refusal(
                URI.create("http://evil.localhost:8000/v1/chat/completions"), null, table))
        .contains("refusing to load-test evil.localhost")
        .contains("does not resolve to loopback addresses only");
    assertThat(
            Target.refusal(
                URI.create("http://evil.localhost:8000/v1/chat/completions"),
                "evil.localhost",
                table))
        .isNull();
  }

  @Test
  void badUrl_badMix_badOptions_areUsageErrors() throws Exception {
    assertThat(run("--target", "ftp://127.0.0.1/x").err())
        .contains("--target: ftp://127.0.0.1/x (expected: an http or https URL");
    assertThat(run("--target", "http://user:pw@127.0.0.1/x").err())
        .contains("credentials in --header, never in the URL")
        .doesNotContain("pw");
    Path mix = dir.resolve("mix.yaml");
    Files.writeString(mix, "requests:\n  - {weight: 0, promptTokens: 10, maxTokens: 10}\n");
    Run r = run("--target", "http://127.0.0.1:1/v1/chat/completions", "--mix", mix.toString());
    assertThat(r.exit()).isEqualTo(2);
    assertThat(r.err())
        .contains("1 error(s)")
        .contains("requests[0].weight: 0 (expected: a number > 0)");
    assertThat(run("--target", "http://127.0.0.1:1/x", "--step-time", "5 minutes").err())
        .contains("--step-time: 5 minutes (expected: a duration such as 250ms, 2s, 1.5s, 5m, 1h)");
    assertThat(
            run("--target", "http://127.0.0.1:1/x", "--start", "8", "--max-concurrency", "4")
                .exit())
        .isEqualTo(2);
    assertThat(run("--target", "http://127.0.0.1:1/x", "--growth", "1").err())
        .contains("--growth: 1.0 (expected: a number in (1, 16])");
  }

  @Test
  void headers_valuesAreNeverPrinted() {
    String secret = "Bearer sk-very-secret";
    assertThat(Target.parseHeaders(java.util.List.of("authorization: " + secret)))
        .singleElement()
        .satisfies(
            h -> {
              assertThat(h.value()).isEqualTo(secret);
              assertThat(h.toString()).doesNotContain("secret");
            });
    assertThatThrownBy(() -> Target.parseHeaders(java.util.List.of("authorization " + secret)))
        .hasMessageNotContaining("secret")
        .hasMessageContaining("--header: (a header) (expected: 'name: value'");
    Run r = run("--target", "http://127.0.0.1:1/x", "--header", "Host: " + secret);
    assertThat(r.exit()).isEqualTo(2);
    assertThat(r.err()).contains("--header: Host (expected: not one of").doesNotContain("secret");
  }

  @Test
  void printMix_printsTheEmbeddedMix() {
    Run r = run("--target", "http://127.0.0.1:1/x", "--print-mix");
    assertThat(r.exit()).isZero();
    assertThat(r.out()).isEqualTo(Mix.embeddedDefaultYaml());
  }

  @Test
  void theServerCli_hasTheSubcommand() {
    StringWriter out = new StringWriter();
    CommandLine cl = new CommandLine(new io.sluice.bootstrap.Main());
    cl.setOut(new PrintWriter(out, true));
    assertThat(cl.execute("calibrate", "--help")).isZero();
    assertThat(out.toString()).contains("--allow-host=HOST").contains("--requests-per-step=N");
  }
}
