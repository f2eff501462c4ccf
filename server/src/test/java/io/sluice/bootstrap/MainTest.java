package io.sluice.bootstrap;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.config.ConfigException;
import io.sluice.config.ConfigLoader;
import io.sluice.config.SluiceConfig;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class MainTest {
  @TempDir Path dir;

  private record Run(int code, String out, String err) {}

  private static Run run(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine cl = new CommandLine(new Main());
    cl.setOut(new PrintWriter(out));
    cl.setErr(new PrintWriter(err));
    int code = cl.execute(args);
    return new Run(code, out.toString(), err.toString());
  }

  @Test
  void validate_goodFile_exitsZero() throws Exception {
    Path f = dir.resolve("ok.yaml");
    Files.writeString(f, "pools: {p: {capacity: 10}}\nclasses: {c: {reservedShare: 1.0}}\n");
    Run r = run("validate", f.toString());
    assertThat(r.code()).isZero();
    assertThat(r.out()).contains("OK (1 pools, 1 classes, 0 routes)");
  }

  @Test
  void validate_badFile_printsEveryErrorWithPath_exitsNonZero() throws Exception {
    Path f = dir.resolve("bad.yaml");
    Files.writeString(
        f,
        "pools: {gpu: {capacity: -5}}\nclasses: {c: {shedStatus: 418}}\nroutes: [{name: r, match: {path: /x}, pool: cpu, class: c}]\n");
    Run r = run("validate", f.toString());
    assertThat(r.code()).isEqualTo(1);
    assertThat(r.err())
        .contains("3 error(s)")
        .contains("pools.gpu.capacity: -5 (expected:")
        .contains("classes.c.shedStatus: 418 (expected: 429 or 503)")
        .contains("routes[0].pool: cpu (expected: a name defined under pools: gpu)");
  }

  @Test
  void validate_lateIntakeOnAClassNoResponsesClientCanPoll_isAnError() throws Exception {
    Path f = dir.resolve("late.yaml");
    Files.writeString(
        f,
        "pools: {gpu: {capacity: 10}}\nclasses: {batch: {reservedShare: 1.0}}\n"
            + "routes: [{name: chat, match: {path: /v1/chat/completions}, class: batch,"
            + " format: openai-chat}]\nunmatched: {action: reject}\n"
            + "intake: {enabled: true, whenLate: {batch: accept}}\n");
    Run r = run("validate", f.toString());
    assertThat(r.code()).isEqualTo(1);
    assertThat(r.err()).contains("intake.whenLate.batch: accept, but no route serves class batch");
  }

  @Test
  void validate_missingFile_exitsNonZero() {
    assertThat(run("validate", dir.resolve("nope.yaml").toString()).code()).isNotZero();
  }

  @Test
  void validate_budgetDegradeRungNoClassLadderHas_isAnError() throws Exception {
    Path f = dir.resolve("rung.yaml");
    Files.writeString(
        f,
        "pools: {gpu: {capacity: 10}}\nclasses: {c: {reservedShare: 1.0, degrade: {waitAbove: 2s,"
            + " ladder: [{concise: {maxOutputTokens: 64}}]}}}\n"
            + "budgets: {degradeAt: 0.9, degradeRung: reroute}\n");
    Run r = run("validate", f.toString());
    assertThat(r.code()).isEqualTo(1);
    assertThat(r.err())
        .contains("budgets.degradeRung: reroute (expected: a rung of a class's degrade ladder:")
        .contains("concise)");
  }

  @Test
  void version_printsVersion() {
    Run r = run("version");
    assertThat(r.code()).isZero();
    assertThat(r.out()).startsWith("sluice ");
  }

  @Test
  void withEnv_overridesPortsAndHosts() {
    SluiceConfig c =
        Main.withEnv(
            ConfigLoader.embeddedDefault(),
            Map.of("GRPC_PORT", "9001", "GRPC_HOST", "127.0.0.1", "PORT", "9002", "HOST", "::1"));
    assertThat(c.server().grpcPort()).isEqualTo(9001);
    assertThat(c.server().grpcHost()).isEqualTo("127.0.0.1");
    assertThat(c.server().adminPort()).isEqualTo(9002);
    assertThat(c.server().adminHost()).isEqualTo("::1");
  }

  @Test
  void withEnv_badPort_isAConfigError() {
    assertThatThrownBy(() -> Main.withEnv(ConfigLoader.embeddedDefault(), Map.of("PORT", "http")))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("PORT: http (expected: a port 0..65535)");
  }
}
